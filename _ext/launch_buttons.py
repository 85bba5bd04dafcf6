"""Launch buttons and repository links, only when the book names its repository.

``repository.url`` in ``_config.yml`` is the one setting naming this repository (the
setup cell, helpers.colab, reads it too). When it is set, every notebook page gets a
Colab launch button (``https://colab.research.google.com/github/<owner>/<repo>/blob/<branch>/book/NN_name.ipynb``),
a JupyterHub button when ``GEMM_BOOK_JUPYTERHUB_URL`` names a hub, and the repository and
issue buttons. When it is empty none of them is added: sphinx-book-theme fails the build
when a ``colab_url`` has no repository to point into. Binder and Thebe stay off (no GPU there).

The pages name the repository through the MyST substitution ``{{ repository }}`` (the
landing page): a link to ``repository.url`` when it is set, else the words "this book's
repository" (``README.md`` says how to get it).
"""
from __future__ import annotations

import os

from sphinx.application import Sphinx

COLAB = "https://colab.research.google.com"


def _substitution(config, url: str) -> None:
    subs = dict(getattr(config, "myst_substitutions", None) or {})
    subs.setdefault("repository", f"[its repository]({url})" if url else "this book's repository")
    config.myst_substitutions = subs


def _buttons(app: Sphinx, config) -> None:
    opts = dict(config.html_theme_options or {})
    _substitution(config, (opts.get("repository_url") or "").strip())
    if not (opts.get("repository_url") or "").strip():
        opts["launch_buttons"] = {k: v for k, v in (opts.get("launch_buttons") or {}).items()
                                  if k not in ("colab_url", "jupyterhub_url", "binderhub_url")}
        opts["use_repository_button"] = opts["use_issues_button"] = False
        config.html_theme_options = opts
        return
    launch = {**(opts.get("launch_buttons") or {}), "colab_url": COLAB, "notebook_interface": "classic"}
    hub = os.environ.get("GEMM_BOOK_JUPYTERHUB_URL", "").strip()
    if hub:
        launch["jupyterhub_url"] = hub
    launch.pop("binderhub_url", None)
    opts.update(launch_buttons=launch, use_repository_button=True, use_issues_button=True)
    config.html_theme_options = opts


def setup(app: Sphinx) -> dict:
    app.connect("config-inited", _buttons, priority=900)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
