"""The demo apps of the seeds: a shopping assistant and a banking agent (idempotent)."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.contrib.auth.base_user import AbstractBaseUser
from django.db import transaction

from agents import services
from agents.models import AgentApp

DEMO_USERNAME = "demo"
DEMO_PASSWORD = "statecraft-demo"

SHOPPING_INSTRUCTIONS = """You are a helpful shopping assistant.
Please follow these business rules: {{business_rules}}.
{% if channel == "telephony" %}Keep answers short: the customer is on the phone.
{% else %}You may use short lists when comparing products.
{% endif %}
Greet {{customer.first_name}} by name and mention their loyalty tier ({{customer.tier}}).
The customer speaks {{languages}}; answer in the first of them.
When the customer picks a product, call {@TOOL: AddToCart} and confirm the {cart_total}.
"""

BANKING_INSTRUCTIONS = """If the user asks for their balance, call the {@TOOL: LookupBalance}.
The tool will update the {current_account_balance} variable.
Always share the {current_account_balance} with the user.
"""

# The demo scenarios are goldens too (issue #11): their expectations check what the tools'
# real code does. Change AddToCart's price (19.5) and "Buy a product" fails.
SHOPPING_SCRIPT = """user: I'd like the blue running shoes, two pairs please.
tool: AddToCart {"product_id": "shoe-blue-42", "quantity": 2}
expect response: AddToCart {"quantity": 2, "cart_total": 39}
expect state [Check_Cart_Total]: {"cart_total": 39}
agent: Done — two pairs are in your cart.
"""

LOOKUP_BALANCE_CODE = '''def LookupBalance(account_id: str = "primary") -> dict:
    """Looks up the balance of the user's account and stores it in current_account_balance."""
    balance = 1250
    context.state["current_account_balance"] = balance
    return {"account_id": account_id, "balance": balance, "currency": "EUR"}
'''

BANKING_SCRIPT = """user: Hi! What is the balance of my current account?
tool: LookupBalance {"account_id": "primary"}
expect response: LookupBalance {"balance": 1250, "currency": "EUR"}
expect state [Check_Balance_Stored]: {"current_account_balance": 1250}
agent: Your current account balance is 1,250 EUR.
user: Thanks. Is that enough to pay a 900 EUR invoice?
expect no calls
agent: Yes — after paying it you would have 350 EUR left.
"""

ADD_TO_CART_CODE = '''def AddToCart(product_id: str, quantity: int = 1) -> dict:
    """Adds a product to the cart and updates the cart total."""
    price = 19.5
    total = context.state.get("cart_total", 0) + price * quantity
    context.state["cart_total"] = total
    return {"product_id": product_id, "quantity": quantity, "cart_total": total}
'''

CUSTOMER_SCHEMA = {
    "type": "object",
    "properties": {
        "first_name": {"type": "string", "description": "Given name"},
        "tier": {"type": "string", "enum": ["bronze", "silver", "gold"]},
        "age": {"type": "integer", "minimum": 0},
    },
    "required": ["first_name", "tier"],
    "additionalProperties": False,
}


def ensure_demo_user() -> AbstractBaseUser:
    """The demo sign-in, a designer who may also use the admin site."""
    User = get_user_model()
    user, created = User.objects.get_or_create(
        username=DEMO_USERNAME,
        defaults={"email": "demo@example.com", "is_staff": True, "is_superuser": True},
    )
    if created:
        # The password is set once, when the user is made: setting it again at every
        # `make run` would change its hash and sign every open session out.
        user.set_password(DEMO_PASSWORD)
        user.save(update_fields=["password"])
    return user


@transaction.atomic
def load_demo(owner: AbstractBaseUser) -> list[AgentApp]:
    """Create the demo apps for `owner` unless they already exist; returns them."""
    return [_shopping(owner), _banking(owner)]


def _shopping(owner: AbstractBaseUser) -> AgentApp:
    existing = AgentApp.objects.filter(owner=owner, name="Shopping assistant").first()
    if existing:
        return existing
    app = services.app_create(
        owner=owner,
        name="Shopping assistant",
        description="The seeds' retail example: static business rules and a customer object.",
    )
    customer = services.schema_create(
        app=app,
        name="Customer",
        json_schema=CUSTOMER_SCHEMA,
        description="Who the assistant is talking to.",
    )
    services.variable_create(
        app=app,
        name="business_rules",
        type="text",
        default="No refunds after 30 days. Free shipping over 50 EUR.",
        description="Rigid business rules, compiled into the prompt.",
    )
    services.variable_create(
        app=app,
        name="customer",
        type="object",
        schema=customer,
        default={"first_name": "Ada", "tier": "gold"},
        description="The signed-in customer.",
    )
    services.variable_create(
        app=app,
        name="languages",
        type="list",
        item_type="text",
        default=["French", "German"],
        description="Languages the customer speaks, preferred first.",
    )
    services.variable_create(
        app=app,
        name="cart_total",
        type="number",
        default=0,
        description="Total of the cart, updated by AddToCart.",
    )
    tool = services.tool_create(
        app=app,
        name="AddToCart",
        kind="python",
        python_code=ADD_TO_CART_CODE,
        description="Adds a product to the cart and updates the cart total.",
    )
    root = app.agents.get(is_root=True)
    root = services.agent_update(
        agent=root,
        display_name="Shopping Assistant",
        instructions=SHOPPING_INSTRUCTIONS,
        description="Helps customers find and buy products.",
        tools=[tool],
    )
    services.scenario_save(agent=root, name="Buy a product", steps_script=SHOPPING_SCRIPT)
    return app


def _banking(owner: AbstractBaseUser) -> AgentApp:
    existing = AgentApp.objects.filter(owner=owner, name="Bank demo").first()
    if existing:
        return existing
    app = services.app_create(
        owner=owner,
        name="Bank demo",
        description="The seeds' banking example: a Python tool updates a dynamic variable.",
    )
    services.variable_create(
        app=app,
        name="current_account_balance",
        type="number",
        description="Balance of the user's current account, set by LookupBalance.",
    )
    services.variable_create(
        app=app,
        name="authenticated",
        type="boolean",
        default=False,
        description="Whether the user has been authenticated.",
    )
    tool = services.tool_create(
        app=app,
        name="LookupBalance",
        kind="python",
        python_code=LOOKUP_BALANCE_CODE,
        description="Looks up the balance of the user's account.",
        mock_state={"current_account_balance": 1250},
        mock_response={"balance": 1250, "currency": "EUR"},
    )
    root = app.agents.get(is_root=True)
    root = services.agent_update(
        agent=root,
        display_name="banking_agent",
        instructions=BANKING_INSTRUCTIONS,
        description="Answers questions about the user's accounts.",
        tools=[tool],
    )
    services.scenario_save(agent=root, name="Balance question", steps_script=BANKING_SCRIPT)
    return app
