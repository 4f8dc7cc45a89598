"""Vectors: the LanceDB index per project and the outbox worker that fills it."""

from memlane.vectors.index import VectorIndex, forget_vectors
from memlane.vectors.worker import ProcessReport, process_outbox, rebuild, reconcile, retry_failed, status

__all__ = [
    "ProcessReport",
    "VectorIndex",
    "forget_vectors",
    "process_outbox",
    "rebuild",
    "reconcile",
    "retry_failed",
    "status",
]
