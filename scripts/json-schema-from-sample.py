#!/usr/bin/env python3
"""Infer a JSON Schema (draft 2020-12) for one of peerpath's --json outputs from a real sample.

Usage: scripts/json-schema-from-sample.py KIND SAMPLE.json "COMMAND THAT MADE IT" > docs/schemas/KIND.schema.json

What it writes: the top-level keys the sample has (required unless null there) with their JSON
types, and below them the types of whatever keys appear (not required: nested maps may be keyed
by data, and variants differ). Numbers are "number" (0 in one run may be 0.5 in another); a
null in the sample allows anything. Edit the descriptions by hand; regenerate when a version changes.
"""
import json
import sys


def infer(v, top=False):
    if isinstance(v, dict):
        s = {"type": "object", "properties": {k: infer(x) for k, x in v.items()}}
        if top:
            s["required"] = [k for k, x in v.items() if x is not None]
        return s
    if isinstance(v, list):
        return {"type": "array", "items": merge([infer(x) for x in v])}
    if isinstance(v, bool):
        return {"type": "boolean"}
    if isinstance(v, (int, float)):
        return {"type": "number"}
    if isinstance(v, str):
        return {"type": "string"}
    return {}


def merge(schemas):
    """One schema for every element of an array: objects' properties united, the common type
    otherwise, anything where the elements differ (tuples such as ["0000:00:00.0", 32902])."""
    if not schemas:
        return {}
    types = {x.get("type") for x in schemas}
    if len(types) != 1 or None in types:
        return {}
    if types == {"object"}:
        props = {}
        for x in schemas:
            for k, sub in x["properties"].items():
                props[k] = merge([props[k], sub]) if k in props else sub
        return {"type": "object", "properties": props}
    if types == {"array"}:
        return {"type": "array", "items": merge([x["items"] for x in schemas])}
    return schemas[0]


def main():
    kind, path, command = sys.argv[1], sys.argv[2], sys.argv[3]
    sample = json.load(open(path))
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": f"peerpath/{kind}/1",
        "title": f"peerpath {kind}, version 1",
        "description": f"What `{command}` prints (inferred from a real output, scripts/json-schema-from-sample.py).",
    }
    schema.update(infer(sample, top=True))
    schema["properties"]["schema"] = {"const": sample["schema"]}
    json.dump(schema, sys.stdout, indent=2)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
