"""Load the shipped profiles from disk: YAML -> JSON Schema -> package gate -> Profile.

Any defect stops the load with a ProfileError naming the file, the field (a JSON path) and what
is wrong, on one line: a broken profile is a packaging bug, never something to guess around.
"""

from __future__ import annotations

import hashlib
import json
import os
from functools import cache
from typing import TYPE_CHECKING

from magicstick_host.domain.profiles import Profile, json_path, profile_from_document
from magicstick_host.errors import ProfileError
from magicstick_host.ports.command_memo import (
    CommandMemo,
    json_exact,
    recall_document,
    remember_document,
)
from magicstick_host.schemas.compiled import compile_schema

if TYPE_CHECKING:
    from typing import Any

    import yaml
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import ValidationError

    from magicstick_host.schemas.compiled import Check

PROFILES_ENV = "MAGICSTICK_HOST_PROFILES"
INSTALLED_PROFILES_DIR = "/usr/local/lib/magicstick/host-management/profiles"
_MAX_MESSAGE = 400
# paths are strings here: pathlib (and urllib.parse, which it imports) is about 6 ms of the
# console's inspect, which reads these files and needs no path object
StrPath = str | os.PathLike[str]


def default_profiles_dir() -> str:
    """$MAGICSTICK_HOST_PROFILES, else the repository's profiles/ (source or editable install),
    else the installed location."""
    override = os.environ.get(PROFILES_ENV)
    if override:
        return override
    beside_package = os.path.join(os.path.dirname(os.path.dirname(os.path.realpath(__file__))),
                                  "profiles")
    if os.path.isdir(beside_package):
        return beside_package
    return INSTALLED_PROFILES_DIR


@cache
def _schema() -> dict[str, Any]:
    with open(os.path.join(os.path.dirname(__file__), "schemas", "profile.schema.json"),
              encoding="utf-8") as file:
        text = file.read()
    schema: dict[str, Any] = json.loads(text)
    return schema


@cache
def _is_valid() -> Check:
    """The compiled validator (schemas/compiled.py): the same verdict as jsonschema's, without
    importing jsonschema on every tick. jsonschema is asked only to describe a defect."""
    return compile_schema(_schema())


def _validator() -> Draft202012Validator:
    from jsonschema import Draft202012Validator

    return Draft202012Validator(_schema())


@cache
def _strict_loader() -> type[yaml.SafeLoader]:
    """SafeLoader that refuses duplicate keys instead of silently keeping the last one (built
    on first use: a tick whose profiles come from the memo never imports yaml)."""
    import yaml

    class StrictLoader(yaml.SafeLoader):
        pass

    def mapping_without_duplicates(loader: yaml.SafeLoader, node: yaml.MappingNode) -> Any:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = loader.construct_object(key_node)
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"duplicate key {key!r}", key_node.start_mark
                )
            seen.add(key)
        return loader.construct_mapping(node)

    StrictLoader.add_constructor(
        yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, mapping_without_duplicates
    )
    return StrictLoader


def _one_line(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= _MAX_MESSAGE else flat[: _MAX_MESSAGE - 3] + "..."


def _fail(path: str, field: str, problem: str) -> ProfileError:
    return ProfileError(_one_line(f"profile {path}: {field}: {problem}"))


def _describe(error: ValidationError) -> tuple[str, str]:
    """(json path, problem), pointing at the offending field itself where the schema can't."""
    parts: list[str | int] = list(error.absolute_path)
    instance = error.instance
    if error.validator == "required" and isinstance(instance, dict):
        required = error.validator_value if isinstance(error.validator_value, list) else []
        missing = [name for name in required if name not in instance]
        if missing:
            return json_path([*parts, missing[0]]), "required field is missing"
    if error.validator == "additionalProperties" and isinstance(instance, dict):
        schema = error.schema if isinstance(error.schema, dict) else {}
        known = set(schema.get("properties", {}))
        extra = sorted(str(k) for k in instance if k not in known)
        if extra:
            return json_path([*parts, extra[0]]), "unknown field (not allowed)"
    # propertyNames failures report the key itself as the instance, at the mapping's path
    if parts == ["packages"] and isinstance(instance, str):
        return json_path([*parts, instance]), f"package name {instance!r} is not allowed here"
    return json_path(parts), error.message


def _read(path: str) -> str:
    try:
        with open(path, encoding="utf-8") as file:
            return file.read()
    except (OSError, UnicodeDecodeError) as exc:
        raise _fail(path, "$", f"cannot be read ({exc})") from exc


def _parse(path: str, text: str) -> Any:
    import yaml

    try:
        return yaml.load(text, Loader=_strict_loader())  # a SafeLoader subclass
    except yaml.YAMLError as exc:
        raise _fail(path, "$", f"is not valid YAML ({exc})") from exc


def load_profile(path: StrPath) -> Profile:
    name = os.fspath(path)
    return _profile_of(name, _parse(name, _read(name)))


def _profile_of(path: str, doc: Any) -> Profile:
    """The profile of a parsed document, checked in full (a remembered one too)."""
    if not isinstance(doc, dict):
        raise _fail(path, "$", "must be a mapping")
    if next(_is_valid()(doc, ()), None) is not None:
        from jsonschema.exceptions import best_match

        error = best_match(_validator().iter_errors(doc))
        field, problem = _describe(error) if error is not None else ("$", "does not match")
        raise _fail(path, field, problem)
    try:
        profile = profile_from_document(doc)
    except ValueError as exc:
        field, _, problem = str(exc).partition(": ")
        raise _fail(path, field, problem) from exc
    return profile


# what the memo's documents were parsed by; a change of `_parse` changes it
PARSE_VERSION = "profiles-1"
# the shipped profiles as parsed, beside them (written by `make profiles`)
SHIPPED_PARSE = "parsed.json"


def _listing_key(texts: list[tuple[str, str]]) -> str:
    """What a parse of these files is remembered by: their names and bytes, and the parser."""
    listing = [[os.path.basename(path), _sha256_hex(text.encode("utf-8"))]
               for path, text in texts]
    return f"{PARSE_VERSION}:{_sha256_hex(repr(listing).encode('utf-8'))}"


def _texts(directory: str) -> list[tuple[str, str]]:
    """(path, text) of every `*.yaml` in `directory`, by name (what pathlib's glob matched)."""
    if not os.path.isdir(directory):
        raise ProfileError(_one_line(f"profile directory {directory} does not exist"))
    try:
        names = sorted(name for name in os.listdir(directory) if name.endswith(".yaml"))
    except OSError as exc:
        problem = f"profile directory {directory} cannot be read ({exc})"
        raise ProfileError(_one_line(problem)) from exc
    return [(path, _read(path)) for path in (os.path.join(directory, n) for n in names)]


def _shipped_documents(directory: str, key: str, count: int) -> list[Any] | None:
    """The documents of `parsed.json` when it is the parse of exactly these files, else None.

    The YAML parser is about 25 ms to import, in every process without the timer's memo that
    reads no other YAML (inspect at a console before the timer has ticked; the first tick after
    a boot still parses the kubeconfig): the checkout ships its own parse. A file that is
    missing, unreadable or for other bytes is passed over; the YAML is then parsed, so what is
    loaded is always the parse of the files as they are."""
    try:
        with open(os.path.join(directory, SHIPPED_PARSE), encoding="utf-8") as file:
            shipped = json.loads(file.read())
    except (OSError, ValueError):
        return None
    if not isinstance(shipped, dict) or shipped.get("key") != key:
        return None
    documents = shipped.get("documents")
    return documents if isinstance(documents, list) and len(documents) == count else None


def shipped_parse(directory: StrPath) -> str:
    """The text of `parsed.json` for the profiles in `directory` (`make profiles` writes it,
    and tests/domain/test_profile_store.py fails while the shipped one differs)."""
    texts = _texts(os.fspath(directory))
    documents = [_parse(path, text) for path, text in texts]
    for (path, _), doc in zip(texts, documents, strict=True):
        if not json_exact(doc):  # JSON would give back another document (a date, a number key)
            raise _fail(path, "$", "has values JSON cannot hold exactly")
    return json.dumps({
        "comment": "Generated from the *.yaml here by `make profiles`; do not edit.",
        "key": _listing_key(texts),
        "documents": documents,
    }, indent=1, ensure_ascii=False) + "\n"


def load_profiles(directory: StrPath, memo: CommandMemo | None = None) -> tuple[Profile, ...]:
    """Every `*.yaml` in `directory`, sorted by file name; any defect raises ProfileError.

    The parsed documents come from the timer's memo (`memo`: ports/command_memo.py), else from
    the shipped parse beside the files (`parsed.json`), each only for exactly these files' names
    and bytes, else from the YAML itself; each document is then checked in full."""
    folder = os.fspath(directory)
    texts = _texts(folder)
    key = _listing_key(texts)
    found, remembered = recall_document(memo, key)
    if not (found and isinstance(remembered, list) and len(remembered) == len(texts)):
        remembered = _shipped_documents(folder, key, len(texts))
        if remembered is None:
            remembered = [_parse(path, text) for path, text in texts]
        remember_document(memo, key, remembered)
    profiles: list[Profile] = []
    first_file: dict[str, str] = {}
    for (path, _), doc in zip(texts, remembered, strict=True):
        profile = _profile_of(path, doc)
        if profile.id in first_file:
            other = first_file[profile.id]
            raise _fail(path, "$.id", f"duplicate id {profile.id!r} (also in {other})")
        first_file[profile.id] = path
        profiles.append(profile)
    return tuple(profiles)


def _sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()
