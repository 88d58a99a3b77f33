" Editing .nx modules (nxc): comments for gc/gq and 'commentstring', 4-space indents.
if exists("b:did_ftplugin")
  finish
endif
let b:did_ftplugin = 1

setlocal commentstring=//\ %s
setlocal comments=s1:/*,mb:*,ex:*/,://
setlocal expandtab shiftwidth=4 softtabstop=4
setlocal cindent cinoptions=j1,J1
setlocal iskeyword=@,48-57,_

let b:undo_ftplugin = "setlocal commentstring< comments< expandtab< shiftwidth< softtabstop< cindent< cinoptions< iskeyword<"
