;;; nx-mode.el --- Major mode for .nx modules (nxc) -*- lexical-binding: t; -*-

;; Keywords: languages
;; Package-Requires: ((emacs "27.1"))

;;; Commentary:

;; Highlighting, comments and indentation for the .nx language of nxc
;; (grammar/nx.lark, docs/language.md), and the nxc language server
;; (`nxc lsp') registered with Eglot.  Token classes follow nxc's Pygments
;; lexer (nxc/tools/pygments_lexer.py); tests/test_editors.py compares the two.
;;
;; In init.el:
;;   (add-to-list 'load-path "/path/to/nxc/editors/emacs")
;;   (require 'nx-mode)
;;   (add-hook 'nx-mode-hook #'eglot-ensure)   ; needs `nxc' on PATH, or set `nx-nxc-program'

;;; Code:

(defgroup nx nil
  "The .nx language of nxc."
  :group 'languages
  :prefix "nx-")

(defcustom nx-nxc-program "nxc"
  "The nxc program that runs the language server.
A name looked up on `exec-path', or a full path (the nxc of a venv)."
  :type 'string)

(defcustom nx-nxc-lsp-args nil
  "More arguments after `nxc lsp', e.g. (\"-I\" \"lib\")."
  :type '(repeat string))

(defcustom nx-indent-offset 4
  "Indentation of a block's contents."
  :type 'integer)

(defface nx-number-face
  (if (facep 'font-lock-number-face) '((t :inherit font-lock-number-face)) '((t :inherit font-lock-constant-face)))
  "Face for integer literals.")

(defface nx-header-key-face '((t :inherit font-lock-preprocessor-face))
  "Face for the key of a module header's `// key: value' metadata line.")

(defconst nx-keywords
  '("import" "const" "type" "struct" "func" "extern" "let" "var" "if" "else" "while"
    "break" "continue" "return" "as" "sizeof"))
(defconst nx-constants '("true" "false"))
(defconst nx-builtin-types '("i8" "i16" "i32" "i64" "u8" "u16" "u32" "u64" "bool" "void"))

(defvar nx-mode-syntax-table
  (let ((st (make-syntax-table)))
    (modify-syntax-entry ?_ "_" st)
    (modify-syntax-entry ?/ ". 124b" st)
    (modify-syntax-entry ?* ". 23" st)
    (modify-syntax-entry ?\n "> b" st)
    (modify-syntax-entry ?\" "\"" st)
    (modify-syntax-entry ?\\ "." st)          ; no escapes in .nx strings
    (dolist (c '(?+ ?- ?% ?& ?| ?^ ?! ?~ ?< ?> ?=))
      (modify-syntax-entry c "." st))
    st)
  "Syntax table of `nx-mode'.")

(defun nx--header-end ()
  "The end of the module header: the leading block of // lines."
  (save-excursion
    (goto-char (point-min))
    (while (and (not (eobp)) (looking-at "[ \t]*//"))
      (forward-line 1))
    (point)))

(defun nx--header-meta-matcher (limit)
  "Find the next `// key: value' line before LIMIT, within the module header only."
  (let ((end (min limit (nx--header-end))))
    (when (< (point) end)
      (re-search-forward "^[ \t]*//[ \t]*\\([a-z][a-z0-9_]*\\):[ \t]+\\S-" end t))))

(defconst nx-font-lock-keywords
  (let ((name "\\([A-Za-z_][A-Za-z0-9_]*\\)"))
    `((nx--header-meta-matcher 1 'nx-header-key-face prepend)
      (,(concat "\\_<func[ \t]+" name) 1 font-lock-function-name-face)
      (,(concat "\\_<\\(?:struct\\|type\\)[ \t]+" name) 1 font-lock-type-face)
      (,(concat "\\_<const[ \t]+" name) 1 font-lock-constant-face)
      (,(regexp-opt nx-keywords 'symbols) . font-lock-keyword-face)
      (,(regexp-opt nx-builtin-types 'symbols) . font-lock-type-face)
      (,(regexp-opt nx-constants 'symbols) . font-lock-constant-face)
      ("\\_<\\(?:0[xX][0-9A-Fa-f]+\\|0[bB][01]+\\|[0-9]+\\)\\_>" . 'nx-number-face)
      ("\\_<[0-9][A-Za-z0-9_]*\\_>" . font-lock-warning-face)
      (,(concat name "[ \t]*(") 1 font-lock-function-name-face)))
  "Highlighting of `nx-mode'.
Names at definitions and calls, keywords, types, literals, header metadata.")

(defun nx-indent-line ()
  "Indent the current line: one `nx-indent-offset' per open bracket before it."
  (interactive)
  (let* ((depth (save-excursion (car (syntax-ppss (line-beginning-position)))))
         (closing (save-excursion (back-to-indentation) (looking-at "[]})]")))
         (col (* nx-indent-offset (max 0 (- depth (if closing 1 0))))))
    (if (<= (current-column) (current-indentation))
        (indent-line-to col)
      (save-excursion (indent-line-to col)))))

;;;###autoload
(define-derived-mode nx-mode prog-mode "Nx"
  "Major mode for .nx modules (nxc)."
  :syntax-table nx-mode-syntax-table
  (setq-local comment-start "// ")
  (setq-local comment-end "")
  (setq-local comment-start-skip "\\(?://+\\|/\\*+\\)\\s-*")
  (setq-local indent-line-function #'nx-indent-line)
  (setq-local indent-tabs-mode nil)
  (setq-local font-lock-defaults '(nx-font-lock-keywords)))

;;;###autoload
(add-to-list 'auto-mode-alist '("\\.nx\\'" . nx-mode))

(defun nx-eglot-contact (&optional _interactive)
  "The command line of the nxc language server, for Eglot."
  (append (list nx-nxc-program "lsp") nx-nxc-lsp-args))

(with-eval-after-load 'eglot
  (defvar eglot-server-programs)
  (add-to-list 'eglot-server-programs '(nx-mode . nx-eglot-contact)))

(provide 'nx-mode)
;;; nx-mode.el ends here
