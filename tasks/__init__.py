"""Thin Prefect tasks: each calls one library function from :mod:`fairmiss`."""
