"""Compares every released event schema with its current one and reports each change that can
break a consumer of that type.

Usage: check_compatibility.py <released-dir> <current-dir>
For each <type>.schema.json in <released-dir>, <current-dir> must hold the same type, and its
schema must accept what consumers were promised: no property removed or made optional, no type
changed, no enum value added, no format or const changed, no limit narrowed. Prints one line per
break ("<type>: <place>: <what>"); exits 1 if any.
"""
import json
import pathlib
import sys

LIMITS_LOWER = ("minimum", "exclusiveMinimum", "minLength", "minItems")
LIMITS_UPPER = ("maximum", "exclusiveMaximum", "maxLength", "maxItems")


def types(schema):
    declared = schema.get("type")
    if declared is None:
        return None
    return set(declared) if isinstance(declared, list) else {declared}


def compare(old, new, place, breaks):
    if not isinstance(old, dict) or not isinstance(new, dict):
        return
    if types(old) != types(new):
        breaks.append(f"{place}: type changed from {sorted(types(old) or [])} to {sorted(types(new) or [])}")
    for keyword in ("format", "const", "$ref", "pattern"):
        if old.get(keyword) != new.get(keyword):
            breaks.append(f"{place}: {keyword} changed from {old.get(keyword)!r} to {new.get(keyword)!r}")
    if "enum" in old or "enum" in new:
        added = [value for value in new.get("enum", []) if value not in old.get("enum", [])]
        if added:
            breaks.append(f"{place}: enum values added {added}")
        if "enum" in old and "enum" not in new:
            breaks.append(f"{place}: enum removed")
    for keyword in LIMITS_LOWER:
        if keyword in new and (keyword not in old or new[keyword] > old[keyword]):
            breaks.append(f"{place}: {keyword} narrowed to {new[keyword]}")
    for keyword in LIMITS_UPPER:
        if keyword in new and (keyword not in old or new[keyword] < old[keyword]):
            breaks.append(f"{place}: {keyword} narrowed to {new[keyword]}")
    old_properties = old.get("properties", {})
    new_properties = new.get("properties", {})
    for name, schema in old_properties.items():
        if name not in new_properties:
            breaks.append(f"{place}/{name}: property removed")
        else:
            compare(schema, new_properties[name], f"{place}/{name}", breaks)
    for name in set(old.get("required", [])) - set(new.get("required", [])):
        breaks.append(f"{place}/{name}: no longer required")
    if old.get("additionalProperties") is not False and new.get("additionalProperties") is False:
        breaks.append(f"{place}: additional properties no longer allowed")
    if "items" in old:
        compare(old["items"], new.get("items", {}), f"{place}/items", breaks)
    for keyword in ("oneOf", "anyOf", "allOf"):
        for index, (a, b) in enumerate(zip(old.get(keyword, []), new.get(keyword, []))):
            compare(a, b, f"{place}/{keyword}/{index}", breaks)
        if len(old.get(keyword, [])) != len(new.get(keyword, [])):
            breaks.append(f"{place}: {keyword} has {len(new.get(keyword, []))} choices instead of {len(old.get(keyword, []))}")
    for name, schema in old.get("$defs", {}).items():
        compare(schema, new.get("$defs", {}).get(name, {}), f"{place}/$defs/{name}", breaks)


released, current = map(pathlib.Path, sys.argv[1:3])
breaks = []
count = 0
for old_file in sorted(released.glob("*.schema.json")):
    event_type = old_file.name.removesuffix(".schema.json")
    new_file = current / old_file.name
    count += 1
    if not new_file.exists():
        breaks.append(f"{event_type}: the type is gone")
        continue
    found = []
    compare(json.loads(old_file.read_text()), json.loads(new_file.read_text()), "#", found)
    breaks += [f"{event_type}: {line}" for line in found]
for line in breaks:
    print(line)
print(f"compared {count} released type(s), {len(breaks)} breaking change(s)")
sys.exit(1 if breaks else 0)
