-- Run after a Neovim init (a recipe of docs/editors.md): open $NX_FILE, wait
-- for the diagnostics of nxc lsp, print JSON {filetype, syntax, clients,
-- diagnostics} and quit. tests/test_editors.py runs it:
--   nvim --headless --clean -u init.lua -c 'luafile nvim_lsp.lua'
vim.cmd.edit(vim.env.NX_FILE)
vim.wait(60000, function() return #vim.diagnostic.get(0) > 0 end, 100)
local out = { filetype = vim.bo.filetype, syntax = vim.b.current_syntax or "", clients = {}, diagnostics = {} }
for _, c in ipairs(vim.lsp.get_clients({ bufnr = 0 })) do table.insert(out.clients, c.name) end
for _, d in ipairs(vim.diagnostic.get(0)) do
  table.insert(out.diagnostics, { line = d.lnum + 1, severity = d.severity, message = d.message })
end
io.stdout:write(vim.json.encode(out) .. "\n")
vim.cmd("qall!")
