"""Retrieval without I/O: profiles, fusion, caps, packing, receipts, results and value bindings."""
