"""AST to checked Program: names, types, constants, layouts; the front end as one call."""
