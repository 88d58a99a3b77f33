" Print, as JSON, the syntax group Vim gives each byte (a blank: "") of each file named on
" the command line, with the filetype and syntax it chose and any error
" message: {"file": {"filetype": .., "syntax": .., "errmsg": .., "rows": [[group, ...], ...]}}.
" tests/test_editors.py runs it (vim -Nu NONE -es, this folder's parent on 'runtimepath').
let s:out = {}
for s:f in argv()
  let v:errmsg = ''
  execute 'edit ' . fnameescape(s:f)
  let s:rows = []
  for s:l in range(1, line('$'))
    let s:row = []
    let s:text = getline(s:l)
    for s:c in range(1, strlen(s:text))
      " a blank belongs to nothing in particular (the comparison skips it): save the lookup
      call add(s:row, s:text[s:c - 1] =~# '[ \t]' ? '' : synIDattr(synID(s:l, s:c, 1), 'name'))
    endfor
    call add(s:rows, s:row)
  endfor
  let s:out[fnamemodify(s:f, ':p')] = {'filetype': &filetype, 'syntax': get(b:, 'current_syntax', ''), 'errmsg': v:errmsg,
        \ 'commentstring': &commentstring, 'rows': s:rows}
endfor
call writefile([json_encode(s:out)], $NX_DUMP_OUT)
qall!
