" .nx modules (nxc): see editors/vim/syntax/nx.vim
autocmd BufRead,BufNewFile *.nx setfiletype nx
