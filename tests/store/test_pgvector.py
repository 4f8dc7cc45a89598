"""pgvector as the vector side: the same answers as LanceDB's exact search, per project, each project with its
own HNSW index, vectors gone with their events."""

from __future__ import annotations

import uuid
from typing import Any

import numpy as np

from conftest import pg_role
from memlane.store import NewEvent
from memlane.store.postgres.store import PgStore
from memlane.store.postgres.vectors import PgVectorIndex


def test_pgvector_finds_the_nearest_events_of_its_own_project_only(pg_server: Any) -> None:
    url = pg_role(pg_server, "alice")
    rng = np.random.default_rng(7)
    stores, indexes, vectors = [], [], []
    for _ in range(2):
        store = PgStore(url, f"vec-{uuid.uuid4().hex[:10]}")
        ids = store.append([NewEvent("agent_response", "s1", f"answer {i}", str(i)) for i in range(40)]).inserted
        vecs = rng.normal(size=(40, 384)).astype(np.float32)
        index = PgVectorIndex(store, "model@1", 384)
        index.upsert([{"event_id": e, "chunk": 0, "vector": v, "type": "agent_response", "session_id": "s1",
                       "ts": "2026-11-27T10:00:00.000Z"} for e, v in zip(ids, vecs, strict=True)])  # fmt: skip
        stores.append(store)
        indexes.append(index)
        vectors.append((ids, vecs))
    ids, vecs = vectors[0]
    query = vecs[3] + 0.05 * rng.normal(size=384).astype(np.float32)
    near = indexes[0].nearest(query, 5)
    exact = sorted(ids, key=lambda e: -float(vecs[ids.index(e)] @ query / np.linalg.norm(vecs[ids.index(e)])))[:5]
    assert list(near) == exact and next(iter(near)) == ids[3]
    assert not set(near) & set(vectors[1][0]), "another project's vectors are never neighbours"
    assert indexes[0].count() == 40 and indexes[0].event_ids() == set(ids)
    assert np.allclose(indexes[0].first_vectors([ids[5]])[ids[5]], vecs[5], atol=1e-5)
    with stores[0].db.cursor() as cur:
        names = {r[0] for r in cur.execute("SELECT indexname FROM pg_indexes WHERE tablename = 'vectors'")}
    assert sum(n.startswith("vectors_hnsw_384_") for n in names) >= 2, "each project has its own HNSW index"
    assert indexes[0].nearest(query, 5, where="type = 'user_prompt'") == {}
    stores[0].forget(stores[0].select_for_forget(ids=[ids[3]]), "event", ids[3])
    assert ids[3] not in indexes[0].nearest(query, 5) and indexes[0].count() == 39
    for store in stores:
        store.close()
