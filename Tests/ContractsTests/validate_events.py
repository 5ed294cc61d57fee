"""Validates event payloads against Splash's event schemas with the jsonschema package.

Usage: validate_events.py <schemas-dir> <payloads-dir>
Every <type>.json (or <type>.example.json, or <type>~<n>.json for one of several payloads of a
type) in <payloads-dir> is validated against <schemas-dir>/<type>.schema.json (Draft 2020-12,
formats checked). Splash's `uuid` format is RFC 9562's lower-case form, the one keys, subjects,
rows and HTTP answers use: an upper-case id fails. Prints one line per failure; exits 1 if any
failed.
"""
import json
import pathlib
import re
import sys

import jsonschema

schemas, payloads = map(pathlib.Path, sys.argv[1:3])
checker = jsonschema.FormatChecker()
checker.checkers = dict(jsonschema.Draft202012Validator.FORMAT_CHECKER.checkers)
LOWER_CASE_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


@checker.checks("uuid")
def lower_case_uuid(value):
    return not isinstance(value, str) or LOWER_CASE_UUID.fullmatch(value) is not None

failures = 0
count = 0
for payload_file in sorted(p for p in payloads.glob("*.json") if not p.name.endswith(".schema.json")):
    event_type = payload_file.name.removesuffix(".json").removesuffix(".example").split("~")[0]
    schema_file = schemas / f"{event_type}.schema.json"
    if not schema_file.exists():
        print(f"{payload_file.name}: no schema {schema_file.name}")
        failures += 1
        continue
    schema = json.loads(schema_file.read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema, format_checker=checker)
    for error in validator.iter_errors(json.loads(payload_file.read_text())):
        print(f"{payload_file.name}: {error.json_path}: {error.message}")
        failures += 1
    count += 1
print(f"validated {count} payload(s), {failures} failure(s)")
sys.exit(1 if failures else 0)
