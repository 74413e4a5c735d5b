"""A list page the bounded decoder refuses (ports/kube_lists.py): the objects on it are read
one by one and the unreadable ones named; when they cannot even be named, the list is still a
classified "cannot tell", never another exception. (The real apiserver's case, a KubeAI Model
nested 2000 levels: tests/tick/test_hostile_objects.py.)"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from magicstick_host.errors import KubeUnreadableError
from magicstick_host.ports.kube_answers import decode_answer
from magicstick_host.ports.kube_lists import list_all

DEEP = '{"a":' * 2000 + "{}" + "}" * 2000


def meta_item(ns: str, name: str, fields: str = "{}") -> str:
    # as the apiserver writes PartialObjectMetadata: ObjectMeta's field order, managedFields last
    return ('{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":'
            f'{{"name":{json.dumps(name)},"namespace":{json.dumps(ns)},"uid":"u",'
            f'"managedFields":[{{"manager":"m","fieldsV1":{fields}}}]}}}}')


def meta_page(items: list[str], token: str = "") -> bytes:
    meta = json.dumps({"resourceVersion": "7", **({"continue": token} if token else {})},
                      separators=(",", ":"))
    return ('{"kind":"PartialObjectMetadataList","apiVersion":"meta.k8s.io/v1","metadata":'
            + meta + ',"items":[' + ",".join(items) + "]}").encode()


class FakeCluster:
    timeout = 10.0

    def __init__(self, pages: list[bytes], metadata: list[bytes], objects: dict[str, bytes]):
        self.pages, self.metadata, self.objects = pages, metadata, objects
        self.gets: list[str] = []

    @contextmanager
    def budget(self, seconds: float, *, apart: bool = False) -> Iterator[None]:
        yield

    def serves(self, group_version: str, plural: str) -> bool:
        return True

    def page(self, path: str, query: list[tuple[str, str]]) -> dict[str, Any]:
        return decode_answer(self.pages[self._index(query)], f"GET {path}")

    def metadata_page(self, path: str, query: list[tuple[str, str]]) -> bytes:
        return self.metadata[self._index(query)]

    def get_one(self, path: str) -> dict[str, Any] | None:
        self.gets.append(path)
        return decode_answer(self.objects[path], f"GET {path}") if path in self.objects \
            else None

    @staticmethod
    def _index(query: list[tuple[str, str]]) -> int:
        return int(dict(query).get("continue", "0"))


PATH = "/apis/kubeai.org/v1/models"


def obj(ns: str, name: str, spec: str = "{}") -> bytes:
    return (f'{{"metadata":{{"namespace":"{ns}","name":"{name}"}},"spec":{spec}}}').encode()


def test_every_page_is_read_and_each_unreadable_object_is_named() -> None:
    cluster = FakeCluster(
        pages=[b'{"items":[' + b"[" * 100_000 + b"]}", b'{"items":[' + DEEP.encode() + b"]}"],
        metadata=[meta_page([meta_item("ai", "ok"), meta_item("ai", "deep", DEEP)], "1"),
                  meta_page([meta_item("other", "deeper", DEEP), meta_item("x", "gone")])],
        objects={f"{PATH[:-7]}/namespaces/ai/models/ok": obj("ai", "ok"),
                 f"{PATH[:-7]}/namespaces/ai/models/deep": obj("ai", "deep", DEEP),
                 f"{PATH[:-7]}/namespaces/other/models/deeper": obj("other", "deeper", DEEP)},
    )
    with pytest.raises(KubeUnreadableError) as caught:
        list_all(cluster, PATH, cluster.page, cluster)
    message = str(caught.value)
    assert message == (f"GET {PATH}: 2 objects cannot be read: ai/deep (nested deeper than "
                       "100 levels), other/deeper (nested deeper than 100 levels)")
    assert len(cluster.gets) == 4  # x/gone was deleted meanwhile: not an error


def test_a_readable_metadata_page_names_the_objects_as_well() -> None:
    cluster = FakeCluster(
        pages=[b'{"items":[' + DEEP.encode() + b"]}"],
        metadata=[meta_page([meta_item("ai", "huge")])],
        objects={f"{PATH[:-7]}/namespaces/ai/models/huge": obj("ai", "huge", DEEP)},
    )
    with pytest.raises(KubeUnreadableError, match="1 object cannot be read: ai/huge"):
        list_all(cluster, PATH, cluster.page, cluster)


@pytest.mark.parametrize("metadata", [b"[" * 100_000, b"garbage", b'{"items": 3}',
                                      meta_page([meta_item("ai", "Not/A Name")]),
                                      meta_page([]).replace(b'"items":[]', b'"items":[' +
                                                            b"[" * 5000 + b"]")])
def test_objects_that_cannot_be_named_are_still_cannot_tell(metadata: bytes) -> None:
    cluster = FakeCluster(pages=[b"[" * 100_000], metadata=[metadata], objects={})
    with pytest.raises(KubeUnreadableError) as caught:
        list_all(cluster, PATH, cluster.page, cluster)
    assert "\n" not in str(caught.value)
    assert cluster.gets == []
