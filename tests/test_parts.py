"""The parts' registry (parts.py): services by type, built at once or on their first use,
and the typed views the routes read; and the orders the composition keeps."""

import importlib
import inspect
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import cast

import pytest
from fastapi import Request

from svc_monitor import domains, features
from svc_monitor.api.dependencies import registered
from svc_monitor.core_parts import CORE_PARTS, STOP_ORDER
from svc_monitor.errors import Unavailable
from svc_monitor.parts import Part, Registry


class Store:
    pass


class Service:
    def __init__(self, store: Store) -> None:
        self.store = store


class Exporter:
    pass


@dataclass(frozen=True, slots=True)
class View:
    service: "Service"
    exporter: "Exporter | None"
    label: str


class TestRegistry:
    def test_a_provided_service_is_built_once_on_its_first_get(self):
        registry = Registry()
        built: list[Service] = []

        def service() -> Service:
            built.append(Service(registry.get(Store)))
            return built[-1]

        registry.provide(Service, service)  # before the Store it needs is registered
        store = registry.add(Store, Store())
        assert registry.get(Service).store is store
        assert registry.get(Service) is built[0]
        assert len(built) == 1

    def test_a_type_is_registered_once(self):
        registry = Registry()
        registry.add(Store, Store())
        with pytest.raises(ValueError, match="Store"):
            registry.provide(Store, Store)

    def test_services_that_need_each_other_are_named(self):
        registry = Registry()
        registry.provide(Store, lambda: registry.get(Service).store)
        registry.provide(Service, lambda: Service(registry.get(Store)))
        with pytest.raises(LookupError, match="Service -> Store -> Service"):
            registry.get(Service)

    def test_a_missing_service_is_found_as_none_and_got_as_an_error(self):
        registry = Registry()
        assert registry.find(Exporter) is None
        with pytest.raises(LookupError, match="Exporter"):
            registry.get(Exporter)

    def test_a_view_takes_each_field_from_the_type_its_annotation_names(self):
        registry = Registry()
        registry.add(Store, Store())
        registry.provide(Service, lambda: Service(registry.get(Store)))
        view = registry.view(View, label="given")
        assert view.service is registry.get(Service)
        assert view.exporter is None  # optional, and no part registered one
        assert view.label == "given"

    def test_a_view_refuses_a_required_field_nobody_registered(self):
        with pytest.raises(LookupError, match=r"View\.service"):
            Registry().view(View, label="given")


def test_a_route_reaches_a_registered_service_once_the_features_are_installed():
    def request(registry: Registry | None) -> Request:
        return cast(
            Request, SimpleNamespace(app=SimpleNamespace(state=SimpleNamespace(registry=registry)))
        )

    get_store = registered(Store)
    with pytest.raises(Unavailable):
        get_store(request(None))
    registry = Registry()
    store = registry.add(Store, Store())
    assert get_store(request(registry)) is store


def test_the_core_stop_order_names_each_core_part_once():
    assert len(STOP_ORDER) == len(set(STOP_ORDER))


class TestEveryPartIsListed:
    """A domain's part.py that neither list names would never run: its routes, polls and
    tasks silently missing. Every function a part module defines that returns a Part is
    in core_parts.CORE_PARTS or features.PARTS, and every domain of domains.py that has a
    part.py is in one of them."""

    def test_each_part_function_is_in_a_list(self):
        root = Path(features.__file__).parent
        listed = {(f.__module__, f.__name__) for f in (*CORE_PARTS, *features.PARTS)}
        found = set()
        for path in sorted(root.rglob("part.py")):
            name = ".".join(("svc_monitor", *path.relative_to(root).with_suffix("").parts))
            module = importlib.import_module(name)
            for attr, value in vars(module).items():
                if (
                    inspect.isfunction(value)
                    and value.__module__ == name
                    and not attr.startswith("_")
                    and inspect.signature(value).return_annotation in (Part, "Part")
                ):
                    found.add((name, attr))
        assert found, "no part modules found"
        assert found - listed == set(), "part functions neither list names"
        assert listed - found == set(), "listed functions that are not part functions"

    def test_each_domain_with_a_part_is_listed(self):
        modules = {f.__module__ for f in (*CORE_PARTS, *features.PARTS)}
        named = {m.split(".")[1] for m in modules}
        assert named <= {*domains.BASE, *domains.FEATURE, "otlp"}
