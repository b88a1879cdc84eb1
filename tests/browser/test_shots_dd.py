import pytest
from playwright.sync_api import Page, expect

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
OUT = "/tmp/shots-dd"


@pytest.fixture
def shop_app(user):
    from agents.demo import load_demo

    return next(a for a in load_demo(user) if a.name == "Shopping assistant")


def test_shots(open_designer, shop_app):
    from agents import services

    tool = shop_app.tools.get(name="AddToCart")
    services.tool_update(
        tool=tool,
        python_code=tool.python_code.replace("price = 19.5", "price = 21")
        + '\n    context.state["languages"] = ["'
        + "x" * 400
        + '"]\n'
        if False
        else tool.python_code.replace("price = 19.5", "price = 21"),
    )
    v = shop_app.variables.get(name="business_rules")
    services.variable_update(variable=v, default="A" * 600)
    page: Page = open_designer(shop_app)
    page.set_viewport_size({"width": 1280, "height": 800})
    expect(page.locator("#conversation-panel .timeline")).to_be_visible()
    page.get_by_role("button", name="Run all").click()
    expect(page.locator("#run-all .run-all-summary")).to_be_visible()
    page.screenshot(path=f"{OUT}/1-designer.png")
    page.locator("#expect-step-2").scroll_into_view_if_needed()
    page.screenshot(path=f"{OUT}/2-golden.png")
    page.locator("details.state").last.scroll_into_view_if_needed()
    page.screenshot(path=f"{OUT}/3-state.png")
    page.get_by_label("Edit customer", exact=True).click()
    page.screenshot(path=f"{OUT}/4-variable.png")
    page.locator("#variable-list li.editing").get_by_role("link", name="Cancel").click()
    page.get_by_label("Edit schema Customer").click()
    page.wait_for_timeout(300)
    page.locator("#schema-list li.editing").get_by_role(
        "link", name="Cancel"
    ).scroll_into_view_if_needed()
    page.screenshot(path=f"{OUT}/5-schema.png")
    page.locator("#schema-list li.editing").get_by_role("link", name="Cancel").click()
    page.get_by_label("Edit tool AddToCart").click()
    page.wait_for_timeout(300)
    page.screenshot(path=f"{OUT}/6-tool.png")
    page.locator("#tool-list li.editing").get_by_role("link", name="Cancel").click()
    # conflict panel
    root = shop_app.agents.get(is_root=True)
    services.agent_save_instructions(
        agent=root,
        instructions="Elsewhere changed.\n" + root.instructions.replace("helpful", "HELPFUL"),
    )
    page.locator("#instructions-editor").click()
    page.keyboard.press("Control+Home")
    page.keyboard.type("Mine. ")
    page.evaluate(
        "window.statecraft.instructions.view.dispatch({changes: {from: 0, to: 30, insert: 'Conflicting edit here '}})"
    )
    page.keyboard.press("Control+s")
    page.wait_for_timeout(1500)
    page.screenshot(path=f"{OUT}/7-conflict.png")
    w = page.evaluate(
        "() => [document.documentElement.scrollWidth, ...[...document.querySelectorAll('.pane')].map(p => p.scrollWidth + '/' + p.clientWidth)]"
    )
    print("WIDTHS", w)
