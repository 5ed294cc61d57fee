"""Checks the request examples of OpenAPI 3.1 documents with the jsonschema package.

Usage: check_openapi_examples.py <openapi.yaml>...
Every JSON request body (application/json) must carry an `example` (or `examples`), and each must
validate against the body's schema (Draft 2020-12, formats checked; `#/components/...` references
resolved in the document). Prints one line per problem and a summary; exits 1 if there was any.
"""
import sys

import jsonschema
import yaml

problems = 0
checked = 0
for path in sys.argv[1:]:
    document = yaml.safe_load(open(path))
    components = document.get("components", {})
    bodies = components.get("requestBodies", {})
    for route, operations in document.get("paths", {}).items():
        for method, operation in operations.items():
            if not isinstance(operation, dict) or "requestBody" not in operation:
                continue
            body = operation["requestBody"]
            if "$ref" in body:
                body = bodies[body["$ref"].rsplit("/", 1)[-1]]
            media = body.get("content", {}).get("application/json")
            if media is None:
                continue
            place = f"{path}: {method.upper()} {route}"
            examples = [media["example"]] if "example" in media else [e.get("value") for e in media.get("examples", {}).values()]
            if not examples:
                print(f"{place}: no example")
                problems += 1
                continue
            # The body's schema beside the document's components, so that its references resolve.
            schema = {"allOf": [media.get("schema", {})], "components": components}
            validator = jsonschema.Draft202012Validator(schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)
            for example in examples:
                checked += 1
                for error in validator.iter_errors(example):
                    print(f"{place}: {error.json_path}: {error.message}")
                    problems += 1
print(f"checked {checked} example(s), {problems} problem(s)")
sys.exit(1 if problems else 0)
