" Vim syntax file
" Language:    Nx (.nx modules of nxc: grammar/nx.lark, docs/language.md)
" Maintainer:  the nxc repository
"
" Token classes follow nxc's Pygments lexer (nxc/tools/pygments_lexer.py);
" tests/test_editors.py compares the two on every bundled module.

if exists("b:current_syntax")
  finish
endif

let s:cpo_save = &cpo
set cpo&vim

syn case match
" Block comments and the header are found from the top of the file: modules
" are small, and a view in the middle of a /* ... */ must know it is there.
syn sync fromstart

syn keyword nxImport      import
syn keyword nxDeclaration extern let var
syn keyword nxFuncKeyword func nextgroup=nxFunction skipwhite
syn keyword nxStructure   struct type nextgroup=nxTypeName skipwhite
syn keyword nxConstKeyword const nextgroup=nxConstName skipwhite
syn keyword nxConditional if else
syn keyword nxRepeat      while
syn keyword nxStatement   break continue return
syn keyword nxOperatorWord as sizeof
syn keyword nxType        i8 i16 i32 i64 u8 u16 u32 u64 bool void
syn keyword nxBoolean     true false

" Operators before comments: for `//` and `/*` the comment (defined later) wins.
syn match nxOperator "->\|<<=\|>>=\|[-+*/%&|^]=\|==\|!=\|<=\|>=\|&&\|||\|<<\|>>\|[-+*/%&|^!~<>=]"

" Names: at a definition, at a call, after `struct`/`type`/`const`.
syn match nxFunctionCall "\<\h\w*\ze\s*("
syn match nxFunction     "\h\w*" contained
syn match nxTypeName     "\h\w*" contained
syn match nxConstName    "\h\w*" contained

" Integers: decimal, hex, binary (no float literals: a float32 is its bit
" pattern in an i64). Stray letters after digits are one bad literal.
syn match nxBadNumber "\<\d\w*"
syn match nxNumber    "\<\d\+\>"
syn match nxNumber    "\<0[xX]\x\+\>"
syn match nxNumber    "\<0[bB][01]\+\>"

" Strings (only after `import`): no escapes; an unclosed one ends at the line end.
syn region nxString start=+"+ end=+"+ end=+$+ oneline

syn keyword nxTodo contained TODO FIXME XXX NOTE
syn match  nxLineComment "//.*$" contains=nxTodo,@Spell
syn region nxBlockComment start="/\*" end="\*/" contains=nxTodo,@Spell

" The module header: the leading block of // lines. Its `key: value` lines
" are metadata (nxc/syntax/parse.py read_header); the same shape further
" down is an ordinary comment.
syn region nxHeader start="\%^\ze\s*//" end="^\ze\%(\s*//\)\@!" contains=nxHeaderMeta,nxLineComment
syn match  nxHeaderMeta "^\s*//\s*[a-z][a-z0-9_]*:\s\+\S.*$" contained contains=nxHeaderKey
" (a look-behind, not \zs: Vim then gives the same group whichever columns are asked first)
syn match  nxHeaderKey  "\%(//\s*\)\@<=[a-z][a-z0-9_]*\ze:" contained

hi def link nxImport       Include
hi def link nxDeclaration  Keyword
hi def link nxFuncKeyword  Keyword
hi def link nxConstKeyword Keyword
hi def link nxStructure    Structure
hi def link nxConditional  Conditional
hi def link nxRepeat       Repeat
hi def link nxStatement    Statement
hi def link nxOperatorWord Keyword
hi def link nxType         Type
hi def link nxBoolean      Boolean
hi def link nxOperator     Operator
hi def link nxFunction     Function
hi def link nxFunctionCall Function
hi def link nxTypeName     Typedef
hi def link nxConstName    Constant
hi def link nxNumber       Number
hi def link nxBadNumber    Error
hi def link nxString       String
hi def link nxTodo         Todo
hi def link nxLineComment  Comment
hi def link nxBlockComment Comment
hi def link nxHeaderMeta   SpecialComment
hi def link nxHeaderKey    PreProc

let b:current_syntax = "nx"

let &cpo = s:cpo_save
unlet s:cpo_save
