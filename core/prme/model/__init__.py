"""Domain models of PRME: records, inputs, search documents and value bindings."""
