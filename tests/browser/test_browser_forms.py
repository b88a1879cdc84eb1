"""Browser tests of the designer's side pane: apps, variables, schemas, as a designer uses them."""

from __future__ import annotations

import json
import re

import pytest
from playwright.sync_api import Locator, Page, expect

pytestmark = [
    pytest.mark.browser,
    pytest.mark.xdist_group("browser-forms"),
    pytest.mark.django_db(transaction=True),
]

TRAVELLER_JSON = (
    '{"type":"object","properties":{"name":{"type":"string"},'
    '"age":{"type":"integer","minimum":0}},"required":["name"]}'
)


# ------------ helpers


def variable_row(page: Page, name: str) -> Locator:
    """The row of one variable in the Variables pane (matched on its exact name)."""
    return page.locator("#variable-list li.item").filter(
        has=page.locator(".item-name", has_text=re.compile(rf"^\s*{re.escape(name)}\s*$"))
    )


def open_new_variable_form(page: Page) -> Locator:
    page.get_by_role("link", name="Add a variable").click()
    form = page.locator("#variable-new form")
    expect(form.get_by_label("Name", exact=True)).to_be_focused()
    return form


def swapping_default(form: Locator, action) -> None:
    """Run `action` (a type change) and wait until the default widget has been swapped."""
    form.locator(".default-field").evaluate("el => { el.dataset.stale = '1'; }")
    action()
    expect(form.locator(".default-field")).to_have_count(1)
    expect(form.locator(".default-field[data-stale]")).to_have_count(0)
    # htmx binds the new widget's triggers when it settles (20 ms later), in the same task
    # that removes `htmx-added`: a change made before that is not seen (the flake under load).
    expect(form.locator(".default-field.htmx-added")).to_have_count(0)


def choose_type(form: Locator, label: str) -> None:
    swapping_default(form, lambda: form.get_by_label("Type").select_option(label=label))


def submit_new_variable(page: Page, form: Locator) -> None:
    form.get_by_role("button", name="Add variable").click()
    expect(page.locator("#variable-new")).to_have_count(0)


def expect_variable(page: Page, name: str, type_label: str, default_text: str) -> None:
    row = variable_row(page, name)
    expect(row).to_have_count(1)
    expect(row.locator(".type-badge")).to_have_text(type_label)
    expect(row.locator("code.default")).to_have_text(default_text)


# ------------ 1. create an app


def test_create_app_from_the_app_list(signed_in_page: Page):
    page = signed_in_page
    expect(page.locator("#app-table")).to_contain_text("No apps yet")

    new_app = page.get_by_role("region", name="New app")
    new_app.get_by_label("Name", exact=True).fill("Trip planner")
    new_app.get_by_role("button", name="Create app").click()

    expect(page).to_have_url(re.compile(r"/apps/\d+/$"))
    expect(page).to_have_title(re.compile(r"^Trip planner"))
    expect(page.locator(".crumb")).to_contain_text("Trip planner")
    # The root agent is there, ready for instructions.
    expect(page.locator(".agent-title")).to_contain_text("root_agent")
    expect(page.locator(".agent-title .type-badge")).to_have_text("root agent")
    expect(page.locator("#agent-list")).to_contain_text("root_agent")
    expect(page.locator("#instructions-editor")).to_be_editable()
    expect(page.locator("#instructions")).to_have_value("")
    # The empty Variables pane says what to do next.
    expect(page.locator("#variable-list .count")).to_have_text("0")
    empty = page.locator("#variable-list .empty")
    expect(empty).to_contain_text("No variables yet")
    expect(empty).to_contain_text("{{name}}")


# ------------ 2. one variable of each type


def test_add_one_variable_of_each_type(signed_in_page: Page, live_server, user):
    from agents import services
    from agents.models import Variable

    app = services.app_create(owner=user, name="Trip planner")
    page = signed_in_page
    page.goto(f"{live_server.url}/apps/{app.pk}/")
    expect(page.locator("#variable-list .empty")).to_contain_text("No variables yet")

    # Text
    form = open_new_variable_form(page)
    form.get_by_label("Name", exact=True).fill("greeting")
    expect(form.get_by_label("Type")).to_have_value("text")
    form.get_by_label("Default").fill("Hello")
    submit_new_variable(page, form)
    expect_variable(page, "greeting", "Text", "Hello")
    expect(page.locator("#variable-list .empty")).to_have_count(0)

    # Number
    form = open_new_variable_form(page)
    form.get_by_label("Name", exact=True).fill("budget")
    choose_type(form, "Number")
    form.get_by_label("Default").fill("1500")
    submit_new_variable(page, form)
    expect_variable(page, "budget", "Number", "1500")

    # Yes/No, through the radio
    form = open_new_variable_form(page)
    form.get_by_label("Name", exact=True).fill("vip")
    choose_type(form, "Yes/No")
    form.locator(".toggle").get_by_text("Yes", exact=True).click()
    expect(form.locator("input[type=radio][value=yes]")).to_be_checked()
    submit_new_variable(page, form)
    expect_variable(page, "vip", "Yes/No", "Yes")  # the reader's form (issue 33, item 4)

    # A schema first, as raw JSON, through the Schemas "+" form
    page.get_by_role("link", name="Add a schema").click()
    schema_form = page.locator("#schema-new form")
    expect(schema_form.get_by_label("Name", exact=True)).to_be_focused()
    schema_form.get_by_label("Name", exact=True).fill("Traveller")
    schema_form.get_by_label("JSON Schema").fill(TRAVELLER_JSON)
    schema_form.get_by_role("button", name="Add schema").click()
    expect(page.locator("#schema-new")).to_have_count(0)
    schema_row = page.locator("#schema-list li.item", has_text="Traveller")
    expect(schema_row.locator(".type-badge")).to_have_text("2 properties")

    # Custom object
    form = open_new_variable_form(page)
    form.get_by_label("Name", exact=True).fill("traveller")
    choose_type(form, "Custom object")
    form.get_by_role("combobox", name=re.compile(r"^Schema")).select_option(label="Traveller")
    expect(form.locator(".default-field .cm-field-json")).to_be_visible()  # a JSON editor
    form.get_by_label("Default").fill('{"name": "Ada", "age": 36}')
    submit_new_variable(page, form)
    expect_variable(page, "traveller", "Traveller", '{"name": "Ada", "age": 36}')

    # List of Text; a quoted item keeps its comma
    form = open_new_variable_form(page)
    form.get_by_label("Name", exact=True).fill("cities")
    choose_type(form, "List")
    swapping_default(form, lambda: form.get_by_label("Items are").select_option(label="Text"))
    form.get_by_label("Default").fill('Paris, "Rome, Lazio"')
    submit_new_variable(page, form)
    expect_variable(page, "cities", "List of Text", '["Paris", "Rome, Lazio"]')

    expect(page.locator("#variable-list .count")).to_have_text("5")
    stored = {v.name: v.default for v in Variable.objects.filter(app=app)}
    assert stored == {
        "greeting": "Hello",
        "budget": 1500,
        "vip": True,
        "traveller": {"name": "Ada", "age": 36},
        "cities": ["Paris", "Rome, Lazio"],
    }


def test_type_change_swaps_only_the_default_widget(signed_in_page: Page, live_server, user):
    from agents import services

    app = services.app_create(owner=user, name="Trip planner")
    services.schema_create(app=app, name="Traveller", json_schema=json.loads(TRAVELLER_JSON))
    page = signed_in_page
    page.goto(f"{live_server.url}/apps/{app.pk}/")

    form = open_new_variable_form(page)
    name = form.get_by_label("Name", exact=True)
    description = form.get_by_label("Description")
    name.fill("budget")
    description.fill("Budget of the whole trip, in EUR.")
    # Tag the fields that must survive: a swapped element would lose the tag.
    name.evaluate("el => { el.dataset.kept = 'yes'; }")
    description.evaluate("el => { el.dataset.kept = 'yes'; }")

    def expect_typed_fields_kept() -> None:
        expect(name).to_have_value("budget")
        expect(name).to_have_attribute("data-kept", "yes")
        expect(description).to_have_value("Budget of the whole trip, in EUR.")
        expect(description).to_have_attribute("data-kept", "yes")

    choose_type(form, "Number")
    expect(form.locator(".default-field input[name=default][inputmode=decimal]")).to_be_visible()
    expect_typed_fields_kept()

    choose_type(form, "Yes/No")
    expect(form.locator("input[type=radio][value=yes]")).to_be_visible()
    expect(form.locator("input[type=radio][value='']")).to_be_checked()
    expect_typed_fields_kept()

    choose_type(form, "Custom object")
    expect(form.get_by_role("combobox", name=re.compile(r"^Schema"))).to_be_visible()
    # A JSON editor (CodeMirror) for the object's default.
    expect(form.locator(".default-field .cm-field-json")).to_be_visible()
    expect_typed_fields_kept()

    choose_type(form, "List")
    expect(form.get_by_label("Items are")).to_be_visible()
    expect_typed_fields_kept()

    choose_type(form, "Text")
    expect(form.get_by_label("Items are")).to_have_count(0)
    expect(form.locator(".default-field textarea[name=default]")).to_be_visible()
    expect_typed_fields_kept()
    # Only one name and one description field: nothing was duplicated by the swaps.
    expect(form.locator("[name=name]")).to_have_count(1)
    expect(form.locator("[name=description]")).to_have_count(1)
    expect(form.locator("[name=type]")).to_have_count(1)


def test_inline_form_submits_on_enter_and_cancels_on_escape(open_designer, trip_app):
    page = open_designer(trip_app)
    expect(page.locator("#variable-list .count")).to_have_text("5")

    form = open_new_variable_form(page)
    form.get_by_label("Name", exact=True).fill("left_out")
    page.keyboard.press("Escape")
    expect(page.locator("#variable-new")).to_have_count(0)
    expect(variable_row(page, "left_out")).to_have_count(0)

    form = open_new_variable_form(page)
    form.get_by_label("Name", exact=True).fill("nights")
    choose_type(form, "Number")
    form.get_by_label("Default").fill("7")
    form.get_by_label("Default").press("Enter")
    expect(page.locator("#variable-new")).to_have_count(0)
    expect_variable(page, "nights", "Number", "7")
    expect(page.locator("#variable-list .count")).to_have_text("6")


def test_yes_no_default_radios_are_labelled_by_their_own_text(
    signed_in_page: Page, live_server, user
):
    """A screen reader announces each radio by its own label; "Default" names the group."""
    from agents import services

    app = services.app_create(owner=user, name="Trip planner")
    page = signed_in_page
    page.goto(f"{live_server.url}/apps/{app.pk}/")
    form = open_new_variable_form(page)
    choose_type(form, "Yes/No")

    group = form.get_by_role("radiogroup", name="Default")
    expect(group).to_be_visible()
    expect(group.get_by_role("radio")).to_have_count(3)
    for value, name in (("yes", "Yes"), ("no", "No"), ("", "No default")):
        expect(form.locator(f"input[type=radio][value='{value}']")).to_have_accessible_name(name)


# ------------ 5. a default that breaks its schema


def test_object_default_checked_against_its_schema(open_designer, trip_app):
    from agents.models import Variable

    page = open_designer(trip_app)
    row = variable_row(page, "traveller")
    row.get_by_role("link", name="Edit traveller").click()

    form = page.locator("#variable-list li.editing form")
    expect(form.get_by_label("Name", exact=True)).to_have_value("traveller")
    default = form.get_by_label("Default")
    typed = '{"name": "Ada", "age": -3}'
    default.fill(typed)
    form.get_by_role("button", name="Save").click()

    error = form.locator(".default-field .error-text")
    expect(error).to_be_visible()
    expect(error).to_contain_text(re.compile(r"minimum", re.IGNORECASE))
    expect(form.locator("textarea[name=default]")).to_have_value(typed)
    expect(form.get_by_label("Default")).to_have_text(typed)
    expect(form.get_by_label("Default")).to_have_attribute("aria-invalid", "true")
    expect(form.get_by_label("Name", exact=True)).to_have_value("traveller")
    # Nothing was saved.
    assert Variable.objects.get(app=trip_app, name="traveller").default == {
        "name": "Ada",
        "age": 36,
    }


# ------------ 6. rename a variable


def _rename_greeting(page: Page) -> None:
    variable_row(page, "greeting").get_by_role("link", name="Edit greeting").click()
    form = page.locator("#variable-list li.editing form")
    expect(form.get_by_label("Name", exact=True)).to_have_value("greeting")
    expect(form.get_by_role("checkbox", name=re.compile("update references"))).to_be_checked()
    form.get_by_label("Name", exact=True).fill("salutation")
    form.get_by_role("button", name="Save").click()
    expect(variable_row(page, "salutation")).to_have_count(1)
    expect(variable_row(page, "greeting")).to_have_count(0)


@pytest.fixture
def greeting_instructions(trip_app):
    from agents import services

    agent = trip_app.agents.get(is_root=True)
    services.agent_update(agent=agent, instructions="{{greeting}}, {{traveller.name}}!")
    return trip_app


def test_rename_updates_references_in_saved_instructions(open_designer, greeting_instructions):
    page = open_designer(greeting_instructions)
    expect(page.locator("#compiled")).to_have_text("Hello, Ada!")

    _rename_greeting(page)

    page.reload()
    expect(page.locator("#instructions")).to_have_value("{{salutation}}, {{traveller.name}}!")
    expect(page.locator("#compiled")).to_have_text("Hello, Ada!")
    expect(page.locator("#diagnostics")).not_to_contain_text("greeting")
    row = variable_row(page, "salutation")
    expect(row.locator("code.default")).to_have_text("Hello")
    expect(row.locator(".usage-link")).to_have_text("used 1\u00d7")


def test_rename_updates_the_open_editor_without_reload(open_designer, greeting_instructions):
    """The designer keeps working in the same page after a rename: no stale {{greeting}}."""
    page = open_designer(greeting_instructions)
    expect(page.locator("#compiled")).to_have_text("Hello, Ada!")

    with page.expect_response(re.compile(r"/preview$")):
        _rename_greeting(page)

    # The rename rewrote the saved instructions; the editor on screen must show them too,
    # or the next autosave is refused (stale version) and the preview reports {{greeting}}.
    expect(page.locator("#instructions")).to_have_value("{{salutation}}, {{traveller.name}}!")
    expect(page.locator("#compiled")).to_have_text("Hello, Ada!")
    expect(page.locator("#diagnostics li.diag").filter(has_text="SC301")).to_have_count(0)


@pytest.mark.parametrize(
    ("path", "name_label", "name", "button"),
    [
        ("scenarios/new", "Name", "Opened in its own tab", "Add scenario"),
        ("variables/new", "Name", "own_tab", "Add variable"),
        ("tools/new", "Name", "OwnTab", "Add tool"),
    ],
)
def test_a_form_opened_on_its_own_page_saves(
    signed_in_page: Page, live_server, trip_app, path, name_label, name, button
):
    """The Add/Edit links open their form on a page of its own (a new tab, no script):
    its Save posts as a plain form and lands on the designer (it used to aim at the
    designer's panes, absent there, and nothing happened)."""
    agent = trip_app.agents.get(is_root=True)
    prefix = f"agents/{agent.pk}/" if path.startswith("scenarios") else ""
    page = signed_in_page
    page.goto(f"{live_server.url}/apps/{trip_app.pk}/{prefix}{path}")
    page.get_by_label(name_label, exact=True).fill(name)
    page.get_by_role("button", name=button).click()
    expect(page.locator("#compiled")).to_be_visible()
    assert page.url.startswith(f"{live_server.url}/apps/{trip_app.pk}/")
    assert page.js_errors == []
    saved = {
        "scenarios/new": lambda: agent.scenarios.filter(name=name).exists(),
        "variables/new": lambda: trip_app.variables.filter(name=name).exists(),
        "tools/new": lambda: trip_app.tools.filter(name=name).exists(),
    }[path]()
    assert saved


def test_a_default_typed_while_the_new_widget_loads_is_kept(open_designer, trip_app):
    """Type changed, then the default typed at once, before the new type's widget came
    back: the typed text is in the new widget (a tester's default saved as none). The
    typing happens when the request has left (htmx:beforeSend), as a quick designer's."""
    page = open_designer(trip_app)
    form = open_new_variable_form(page)
    form.get_by_label("Name", exact=True).fill("quick")
    page.evaluate(
        """() => document.body.addEventListener("htmx:beforeSend", (e) => {
            const old = document.querySelector("#variable-new .default-field [name=default]");
            if (e.detail.requestConfig.path.includes("default-field")) old.value = "abc";
        }, { once: true })"""
    )
    form.get_by_label("Type").select_option(label="Number")
    expect(form.locator(".default-field input[name=default][inputmode=decimal]")).to_have_value(
        "abc"
    )
    form.get_by_role("button", name="Add variable").click()
    expect(form.locator(".default-field")).to_contain_text("is not a number")


def test_a_form_back_with_an_error_focuses_the_field_in_error(open_designer, trip_app):
    """Not the name with its text selected (a tester's find): the field to fix."""
    page = open_designer(trip_app)
    form = open_new_variable_form(page)
    form.get_by_label("Name", exact=True).fill("wrong_number")
    choose_type(form, "Number")
    form.get_by_label("Default").fill("abc")
    form.get_by_role("button", name="Add variable").click()
    expect(form.locator(".default-field")).to_contain_text("is not a number")
    expect(form.get_by_label("Default")).to_be_focused()
