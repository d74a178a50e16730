"""What an app's Python backend does when a signed-in user loads a page with
the switchboard SDK: open a browser session for that user with the admin
token and hand the id and token to the page. Standard library only.

    SWITCHBOARD_TOKEN=$(cat ~/.local/share/switchboard/admin.token) python3 examples/backend-session/session.py user:42
"""
import json
import os
import sys
import urllib.error
import urllib.request


def open_session(base, admin_token, principal, allow=()):
    req = urllib.request.Request(
        base + "/api/v1/sessions",
        data=json.dumps({"principal": principal, "allow": list(allow)}).encode(),
        headers={"Authorization": "Bearer " + admin_token, "Content-Type": "application/json"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(req) as res:
            body = json.load(res)
    except urllib.error.HTTPError as e:
        raise RuntimeError(f"open session: {e.code}: {e.read().decode()}") from None
    # Pass both to the SDK's connect().
    return {"sessionId": body["sessionId"], "sessionToken": body["sessionToken"]}


if __name__ == "__main__":
    base = os.environ.get("SWITCHBOARD_URL", "http://127.0.0.1:7766")
    principal = sys.argv[1] if len(sys.argv) > 1 else "user:42"
    try:
        print(json.dumps(open_session(base, os.environ.get("SWITCHBOARD_TOKEN", ""), principal, ["tasks.*", "nav.*"])))
    except Exception as e:  # noqa: BLE001 - a script: say what went wrong
        print(e, file=sys.stderr)
        sys.exit(1)
