"""Retrieval logic: fusion, packing results, receipts and value-binding resolution."""
