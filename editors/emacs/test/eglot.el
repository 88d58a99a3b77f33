;;; eglot.el --- open a .nx file in nx-mode with Eglot and print its diagnostics -*- lexical-binding: t; -*-
;; NX_EMACS_DIR=editors/emacs NX_NXC=path/to/nxc NX_FILE=m.nx emacs --batch -q -l eglot.el
;; prints one line "DIAG line type: text" per Flymake diagnostic Eglot received from
;; `nxc lsp', then shuts the server down. tests/test_editors.py runs it.
(add-to-list 'load-path (getenv "NX_EMACS_DIR"))
(require 'nx-mode)
(require 'eglot)
(setq nx-nxc-program (getenv "NX_NXC"))
(setq eglot-sync-connect 60)                ; batch: wait for the server, not in the background
(find-file (getenv "NX_FILE"))
(unless (eq major-mode 'nx-mode) (error "not nx-mode: %s" major-mode))
(eglot-ensure)
(run-hooks 'post-command-hook)              ; eglot-ensure connects after the next command
(unless (eglot-current-server) (error "Eglot did not start a server"))
(let ((deadline (+ (float-time) 60)) diags)
  (while (and (null diags) (< (float-time) deadline))
    (accept-process-output nil 0.2)
    (flymake-start)
    (setq diags (flymake-diagnostics)))
  (dolist (d diags)
    (princ (format "DIAG %s %s: %s\n" (line-number-at-pos (flymake-diagnostic-beg d))
                   (flymake-diagnostic-type d) (flymake-diagnostic-text d)))))
(eglot-shutdown (eglot-current-server))
