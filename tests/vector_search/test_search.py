"""KNN search through the API, as a member, against a real RediSearch: the nearest
documents by cosine distance, as a brute-force reading of the same vectors ranks them."""

import math
import random
import struct
from collections.abc import AsyncIterator
from typing import Any

import pytest

from tests.fixtures.search_module import emptied
from tests.fixtures.servers import RunningServer
from tests.fixtures.workspace import Workspace, open_workspace, workspace_settings

DIM = 16
DOCS = 500


def _vectors() -> list[list[float]]:
    rng = random.Random(11)
    return [[rng.uniform(-1, 1) for _ in range(DIM)] for _ in range(DOCS)]


VECTORS = _vectors()


def cosine_distance(a: list[float], b: list[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    return 1 - dot / (math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b)))


@pytest.fixture(scope="module")
def catalogue(search_server: RunningServer) -> RunningServer:
    """An exact (FLAT) index of DOCS products with a tag, so ranks can be checked exactly."""
    emptied(search_server)
    with search_server.client() as conn:
        conn.execute_command(
            "FT.CREATE", "products", "ON", "HASH", "PREFIX", "1", "p:", "SCHEMA",
            "name", "TEXT", "colour", "TAG",
            "embedding", "VECTOR", "FLAT", "6", "TYPE", "FLOAT32", "DIM", str(DIM),
            "DISTANCE_METRIC", "COSINE",
        )  # fmt: skip
        pipe = conn.pipeline(transaction=False)
        for i, v in enumerate(VECTORS):
            blob = struct.pack(f"<{DIM}f", *v)
            colour = "red" if i % 2 else "blue"
            pipe.hset(
                f"p:{i}", mapping={"name": f"product {i}", "colour": colour, "embedding": blob}
            )
        pipe.execute()
    return search_server


@pytest.fixture
async def member(catalogue: RunningServer) -> AsyncIterator[tuple[Workspace, Any]]:
    async with open_workspace(workspace_settings(catalogue)) as space:
        yield space, (await space.join("Mia")).client


def nearest(query: list[float], k: int, keep: Any = lambda i: True) -> list[str]:
    ranked = sorted((cosine_distance(query, v), i) for i, v in enumerate(VECTORS) if keep(i))
    return [f"p:{i}" for _, i in ranked[:k]]


class TestKnnSearch:
    async def test_a_member_finds_the_nearest_documents_to_a_vector(self, member: Any):
        _, client = member
        query = [random.Random(5).uniform(-1, 1) for _ in range(DIM)]
        answer = await client.post(
            "/api/vector-search/indexes/products/search", json={"vector": query, "k": 5}
        )
        assert answer.status_code == 200, answer.text
        body = answer.json()
        assert body["field"] == "embedding"
        assert [h["key"] for h in body["hits"]] == nearest(query, 5)
        first = body["hits"][0]
        assert math.isclose(
            first["score"], cosine_distance(query, VECTORS[int(first["key"][2:])]), abs_tol=1e-4
        )
        assert set(first["fields"]) == {"name", "colour"}  # the vector itself is left out
        scores = [h["score"] for h in body["hits"]]
        assert scores == sorted(scores)

    async def test_similar_to_a_key_with_a_filter(self, member: Any):
        _, client = member
        answer = await client.post(
            "/api/vector-search/indexes/products/search",
            json={"sourceKey": "p:42", "k": 4, "filter": "@colour:{red}"},
        )
        assert answer.status_code == 200, answer.text
        keys = [h["key"] for h in answer.json()["hits"]]
        assert keys == nearest(VECTORS[42], 4, keep=lambda i: i % 2 == 1)
        assert keys[0] != "p:42"  # 42 is blue: the filter keeps it out

    @pytest.mark.parametrize(
        ("body", "field"),
        [
            ({"vector": [0.5] * (DIM - 1)}, "vector"),
            ({"vector": [0.5] * DIM, "field": "nope"}, "field"),
            ({"vector": [0.5] * DIM, "k": 0}, "k"),
            ({"vector": [0.5] * DIM, "k": 101}, "k"),
            ({"vector": [0.5] * DIM, "filter": "*)=>[KNN 100000 @embedding $vec"}, "filter"),
            ({"vector": [0.5] * DIM, "filter": "@colour:{"}, "filter"),
            ({"vector": [0.5] * DIM, "sourceKey": "p:1"}, None),
            ({}, None),
            ({"vector": [0.5] * 5000}, "vector"),
        ],
        ids=[
            "wrong-dims", "no-such-field", "k-zero", "k-too-big", "second-knn",
            "bad-filter", "both", "neither", "too-long",
        ],
    )  # fmt: skip
    async def test_bad_input_is_a_422_naming_the_field(
        self, member: Any, body: dict[str, Any], field: str | None
    ):
        _, client = member
        answer = await client.post("/api/vector-search/indexes/products/search", json=body)
        assert answer.status_code == 422, answer.text
        if field is not None:
            assert field in answer.text

    async def test_a_missing_index_or_key_is_a_404(self, member: Any):
        _, client = member
        missing = await client.post(
            "/api/vector-search/indexes/nope/search", json={"vector": [0.1] * DIM}
        )
        assert missing.status_code == 404, missing.text
        no_key = await client.post(
            "/api/vector-search/indexes/products/search", json={"sourceKey": "p:none"}
        )
        assert no_key.status_code == 404, no_key.text

    async def test_a_member_post_elsewhere_is_still_403(self, member: Any):
        _, client = member
        answer = await client.post(
            "/api/connections", json={"name": "x", "host": "127.0.0.1", "port": 1}
        )
        assert answer.status_code == 403


class TestTextQueryAndProfile:
    async def test_a_member_queries_by_tag_and_text(self, member: Any):
        _, client = member
        answer = await client.post(
            "/api/vector-search/indexes/products/query",
            json={"query": "@colour:{red} @name:product", "limit": 5},
        )
        assert answer.status_code == 200, answer.text
        body = answer.json()
        assert body["total"] == DOCS // 2
        assert len(body["hits"]) == 5
        for hit in body["hits"]:
            assert hit["fields"]["colour"] == "red"
            assert "embedding" not in hit["fields"]
            assert int(hit["key"][2:]) % 2 == 1

    async def test_a_member_profiles_a_query(self, member: Any):
        _, client = member
        answer = await client.post(
            "/api/vector-search/indexes/products/profile", json={"query": "@colour:{blue}"}
        )
        assert answer.status_code == 200, answer.text
        body = answer.json()
        assert body["total"] == DOCS // 2
        assert "Total profile time" in str(body["profile"])
        assert "Iterators profile" in str(body["profile"])

    @pytest.mark.parametrize("route", ["query", "profile"])
    @pytest.mark.parametrize(
        "query", ["@colour:{", "*=>[KNN 5 @embedding $vec]"], ids=["not-a-query", "vector-clause"]
    )
    async def test_a_bad_query_is_a_422_naming_it(self, member: Any, route: str, query: str):
        _, client = member
        answer = await client.post(
            f"/api/vector-search/indexes/products/{route}", json={"query": query}
        )
        assert answer.status_code == 422, answer.text
        assert "query" in answer.text

    async def test_profile_refused_to_the_connections_user_is_a_501_saying_so(
        self, catalogue: RunningServer
    ):
        with catalogue.client() as admin:
            admin.execute_command(
                "ACL", "SETUSER", "noprofile", "on", ">noprofile-pw-7", "~*", "+@all", "-ft.profile"
            )
        settings = workspace_settings(
            catalogue, DB_USERNAME="noprofile", DB_PASSWORD="noprofile-pw-7"
        )
        async with open_workspace(settings) as space:
            answer = await space.owner.client.post(
                "/api/vector-search/indexes/products/profile", json={"query": "*"}
            )
        assert answer.status_code == 501, answer.text
        assert "FT.PROFILE is not available" in answer.json()["message"]
        assert "noprofile-pw-7" not in answer.text
