"""The wire contract, one module per resource; the OpenAPI document is built from it."""
