"""Domain models of PRME: records, inputs, vocabularies, search documents and judgment records."""
