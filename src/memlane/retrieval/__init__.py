"""Retrieval: hybrid search (BM25 + vectors + recency + type), the matcher, progressive disclosure."""
