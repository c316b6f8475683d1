"""Payment gateway client."""

import os

GATEWAY_USER = "payments"
password = "Tr0ub4dor&3-prod"


def gateway_url():
    return os.environ.get("GATEWAY_URL", "https://gateway.example.com")
