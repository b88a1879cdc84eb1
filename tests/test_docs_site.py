"""The documentation site (docs/, MkDocs): served by the app at /docs/, the designer's help
links open its pages in the reader's language, and the designer's guide is in English,
French and German. (`mkdocs build --strict` itself runs in CI: `make docs`.)"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from django.conf import settings
from django.test import Client, override_settings

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
HELP_LINK = re.compile(r'\{% help_link "([^"]+)"')


def nav_pages(node) -> set[str]:
    if isinstance(node, str):
        return {node}
    if isinstance(node, list):
        return set().union(*(nav_pages(n) for n in node))
    if isinstance(node, dict):
        return set().union(*(nav_pages(v) for v in node.values()))
    return set()


def mkdocs_config() -> dict:
    # The i18n plugin's entries are plain YAML; no !tags in mkdocs.yml.
    return yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))


@pytest.fixture
def site(tmp_path):
    """A built site's shape: the home, a guide page, its French page."""
    (tmp_path / "designer").mkdir()
    (tmp_path / "fr" / "designer").mkdir(parents=True)
    (tmp_path / "index.html").write_text("<html lang='en'><title>Statecraft</title>home")
    (tmp_path / "designer" / "index.html").write_text("<html lang='en'>guide")
    (tmp_path / "fr" / "designer" / "index.html").write_text("<html lang='fr'>guide fr")
    with override_settings(DOCS_SITE_DIR=tmp_path):
        yield tmp_path


def test_the_site_is_served_at_docs(site):
    answer = Client().get("/docs/")
    assert answer.status_code == 200 and b"home" in b"".join(answer.streaming_content)


def test_a_guide_page_is_served_in_french(site):
    answer = Client().get("/docs/fr/designer/")
    assert b"guide fr" in b"".join(answer.streaming_content)


def test_a_page_without_its_slash_is_redirected_to_it(site):
    answer = Client().get("/docs/designer")
    assert answer.status_code == 302 and answer["Location"].endswith("designer/")


def test_the_site_pages_are_not_under_the_apps_script_policy(site):
    # Material's theme reads its configuration from an inline script.
    answer = Client().get("/docs/")
    assert "Content-Security-Policy" not in answer


def test_an_unknown_page_is_a_404(site):
    assert Client().get("/docs/nope/").status_code == 404


def test_before_make_docs_the_site_says_how_to_build_it(tmp_path):
    with override_settings(DOCS_SITE_DIR=tmp_path / "site"):
        answer = Client().get("/docs/")
    assert answer.status_code == 404 and b"make docs" in answer.content


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("language", "prefix"), [("en", "/docs/"), ("fr", "/docs/fr/"), ("de", "/docs/de/")]
)
def test_the_designers_help_links_open_the_guide_in_the_readers_language(
    client, user, shop, language, prefix
):
    client.force_login(user)
    client.cookies[settings.LANGUAGE_COOKIE_NAME] = language
    page = client.get(f"/apps/{shop.pk}/").content.decode()
    links = re.findall(r'class="help-link" href="([^"]+)"', page)
    assert links and all(link.startswith(prefix + "designer/") for link in links)


def test_every_help_link_names_a_page_of_the_guide():
    pages = nav_pages(mkdocs_config()["nav"])
    targets = {
        target
        for template in (ROOT / "templates").rglob("*.html")
        for target in HELP_LINK.findall(template.read_text(encoding="utf-8"))
    }
    assert targets and {f"{t}.md" for t in targets} - pages == set()


def test_every_page_is_in_the_navigation():
    pages = {
        str(p.relative_to(DOCS))
        for p in DOCS.rglob("*.md")
        if not re.search(r"\.(fr|de)\.md$", p.name)
    }
    assert pages - nav_pages(mkdocs_config()["nav"]) == set()


@pytest.mark.parametrize("language", ["fr", "de"])
def test_the_designers_guide_is_translated(language):
    english = sorted(p for p in (DOCS / "designer").glob("*.md") if p.name.count(".") == 1)
    missing = [p.name for p in english if not p.with_suffix(f".{language}.md").is_file()]
    assert english and missing == []


def test_the_readme_is_short():
    assert len((ROOT / "README.md").read_text(encoding="utf-8").splitlines()) < 200
