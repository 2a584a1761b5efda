import re

from tests.fixtures.app import RunningApp


class TestApiDocs:
    async def test_docs_page_loads_only_local_assets(self, api: RunningApp):
        response = await api.client.get("/api")
        assert response.status_code == 200
        assert "text/html" in response.headers["content-type"]
        sources = re.findall(r'(?:src|href)="([^"]+)"', response.text)
        assert sources, "the page should load Swagger UI"
        assert all(s.startswith("/") for s in sources), sources
        for source in sources:
            asset = await api.client.get(source)
            assert asset.status_code == 200, source

    async def test_openapi_json_lists_the_api(self, api: RunningApp):
        spec = (await api.client.get("/api/openapi.json")).json()
        paths = spec["paths"]
        for path in (
            "/api/health",
            "/api/connections",
            "/api/connections/test",
            "/api/connections/{connection_id}/default",
            "/api/settings",
            "/api/settings/reset",
            "/api/version",
        ):
            assert path in paths, path
        create = paths["/api/connections"]["post"]
        assert {"201", "400", "422"} <= set(create["responses"])

    async def test_every_route_has_a_description(self, api: RunningApp):
        spec = (await api.client.get("/api/openapi.json")).json()
        for path, operations in spec["paths"].items():
            for method, operation in operations.items():
                assert operation.get("description"), f"{method.upper()} {path}"

    async def test_unknown_api_path_is_a_json_404(self, api: RunningApp):
        response = await api.client.get("/api/no-such-thing")
        assert response.status_code == 404
        assert response.json()["statusCode"] == 404


class TestErrorSchema:
    async def test_error_responses_point_at_the_shared_error_body(self, api: RunningApp):
        spec = (await api.client.get("/api/openapi.json")).json()
        error = spec["components"]["schemas"]["ErrorBody"]
        assert {"statusCode", "message", "error"} <= set(error["properties"])
        not_found = spec["paths"]["/api/connections/{connection_id}"]["get"]["responses"]["404"]
        schema = not_found["content"]["application/json"]["schema"]
        assert schema == {"$ref": "#/components/schemas/ErrorBody"}
