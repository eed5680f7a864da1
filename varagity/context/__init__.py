"""Contextual Retrieval: the situating blurb written for each chunk."""
