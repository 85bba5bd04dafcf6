"""Launch buttons and repository links follow `repository.url` of _config.yml (issue #13):
the book is built twice, with the URL set (every chapter page links to Colab at
.../blob/<branch>/book/NN_name.ipynb, and to the repository and its issues) and empty
(the build passes with none of them). `jupyter-book build -W` both times."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from test_book_build import _warnings, build_book

REPO = Path(__file__).resolve().parent.parent
URL = "https://github.com/example-owner/nine-heavens-gemm"
CHAPTERS = sorted(p.stem for p in (REPO / "book").glob("[0-9][0-9]_*.ipynb"))


def _config(tmp: Path, url: str) -> Path:
    """_config.yml with ``repository.url`` = ``url``, its local extensions by absolute path
    (jupyter-book resolves them from the config file's folder)."""
    text = (REPO / "_config.yml").read_text()
    text = re.sub(r'(?m)^(repository:\s*\n\s+url:\s*)"[^"]*"', rf'\1"{url}"', text)
    text = re.sub(r"(?m)^(\s+\w+: )_ext$", rf"\g<1>{REPO / '_ext'}", text)
    out = tmp / "_config.yml"
    out.write_text(text)
    return out


@pytest.fixture(scope="module", params=[URL, ""], ids=["url-set", "url-empty"])
def built(request, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("launch")
    b = build_book(REPO, tmp, config=_config(tmp, request.param))
    assert b.returncode == 0 and not _warnings(b.log), "\n".join(_warnings(b.log)) + b.log[-3000:]
    return request.param, b


def test_chapter_pages_link_to_colab_and_the_repository_only_when_the_url_is_set(built):
    url, b = built
    for stem in CHAPTERS:
        html = (b.html / "book" / f"{stem}.html").read_text()
        colab = set(re.findall(r'https://colab\.research\.google\.com[^"\']*', html))
        if url:
            assert colab == {f"https://colab.research.google.com/github/{URL[len('https://github.com/'):]}"
                             f"/blob/main/book/{stem}.ipynb"}, (stem, colab)
            assert f'href="{URL}"' in html and f"{URL}/issues/new" in html, stem
        else:
            assert not colab and "github.com" not in html, stem
