"""Payment gateway client."""

import os

GATEWAY_USER = "payments"


def gateway_url():
    return os.environ.get("GATEWAY_URL", "https://sandbox.example.com")
