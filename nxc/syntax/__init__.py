"""Text to AST: lexer, statement ends, the LALR driver, the parser, the AST and the import loader."""
