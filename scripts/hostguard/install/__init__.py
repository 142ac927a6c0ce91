"""The installer (`install`) and its editors: its transaction store, the safe file access, the
user's files, the web server and properties edits, the programs and services a part needs."""
