"""Load the shipped profiles from disk: YAML -> JSON Schema -> package gate -> Profile.

Any defect stops the load with a ProfileError naming the file, the field (a JSON path) and what
is wrong, on one line: a broken profile is a packaging bug, never something to guess around.
"""

from __future__ import annotations

import json
import os
from functools import cache
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from magicstick_host.domain.profiles import Profile, json_path, profile_from_document
from magicstick_host.errors import ProfileError
from magicstick_host.schemas.compiled import Check, compile_schema

if TYPE_CHECKING:
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import ValidationError

PROFILES_ENV = "MAGICSTICK_HOST_PROFILES"
INSTALLED_PROFILES_DIR = Path("/usr/local/lib/magicstick/host-management/profiles")
_MAX_MESSAGE = 400


def default_profiles_dir() -> Path:
    """$MAGICSTICK_HOST_PROFILES, else the repository's profiles/ (source or editable install),
    else the installed location."""
    override = os.environ.get(PROFILES_ENV)
    if override:
        return Path(override)
    beside_package = Path(__file__).resolve().parent.parent / "profiles"
    if beside_package.is_dir():
        return beside_package
    return INSTALLED_PROFILES_DIR


@cache
def _schema() -> dict[str, Any]:
    text = (
        resources.files("magicstick_host.schemas")
        .joinpath("profile.schema.json")
        .read_text(encoding="utf-8")
    )
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


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that refuses duplicate keys instead of silently keeping the last one."""


def _mapping_without_duplicates(loader: yaml.SafeLoader, node: yaml.MappingNode) -> Any:
    seen: set[Any] = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node)
        if key in seen:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r}", key_node.start_mark
            )
        seen.add(key)
    return loader.construct_mapping(node)


_StrictLoader.add_constructor(
    yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _mapping_without_duplicates
)


def _one_line(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= _MAX_MESSAGE else flat[: _MAX_MESSAGE - 3] + "..."


def _fail(path: Path, field: str, problem: str) -> ProfileError:
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


def load_profile(path: Path) -> Profile:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise _fail(path, "$", f"cannot be read ({exc})") from exc
    try:
        doc = yaml.load(text, Loader=_StrictLoader)  # a SafeLoader subclass
    except yaml.YAMLError as exc:
        raise _fail(path, "$", f"is not valid YAML ({exc})") from exc
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


def load_profiles(directory: Path) -> tuple[Profile, ...]:
    """Every `*.yaml` in `directory`, sorted by file name; any defect raises ProfileError."""
    if not directory.is_dir():
        raise ProfileError(_one_line(f"profile directory {directory} does not exist"))
    profiles: list[Profile] = []
    first_file: dict[str, Path] = {}
    for path in sorted(directory.glob("*.yaml")):
        profile = load_profile(path)
        if profile.id in first_file:
            other = first_file[profile.id]
            raise _fail(path, "$.id", f"duplicate id {profile.id!r} (also in {other})")
        first_file[profile.id] = path
        profiles.append(profile)
    return tuple(profiles)
