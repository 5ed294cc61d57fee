"""supabase-py's realtime client (async) against Splash's /realtime/v1, through the gateway, unchanged.

Usage: supabase_realtime_flow.py <gateway url> <anon key> <customer token> <stranger token> <owner token>
                                 <order id> <customer id> <new username>
The customer follows the order's UPDATEs (id=eq.<order>) while its restaurant accepts and prepares
it through tracking's API; a stranger's join on the order is refused; a rename reaches a profiles
subscriber; a broadcast reaches the other client and not its sender. Prints "all steps passed", or
the first step that failed (and exits 1).
"""
import asyncio
import json
import sys
import urllib.request

from realtime import AsyncRealtimeClient, RealtimeSubscribeStates

gateway, anon, customer_token, stranger_token, owner_token, order, customer_id, new_name = sys.argv[1:9]


def expect(condition, what):
    if not condition:
        print("FAILED:", what)
        sys.exit(1)


def call(method, path, token, body, headers=None):
    request = urllib.request.Request(gateway + path, method=method, data=json.dumps(body).encode(),
                                     headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json", **(headers or {})})
    with urllib.request.urlopen(request, timeout=10) as response:
        return response.status


async def until(condition, what, seconds=15):
    for _ in range(seconds * 20):
        if condition():
            return
        await asyncio.sleep(0.05)
    expect(False, f"{what} within {seconds} s")


async def joined(client, channel):
    states = []
    await channel.subscribe(lambda state, error: states.append((state, error)))
    return states


async def main():
    url = gateway + "/realtime/v1"

    # The customer follows the order.
    customer = AsyncRealtimeClient(url, token=anon)
    await customer.set_auth(customer_token)
    changes = []
    order_channel = customer.channel("my-order")
    order_channel.on_postgres_changes("UPDATE", table="orders", schema="public", filter=f"id=eq.{order}",
                                      callback=lambda payload: changes.append(payload))
    states = await joined(customer, order_channel)
    expect(states and states[-1][0] == RealtimeSubscribeStates.SUBSCRIBED, f"the customer's join: {states}")

    # A stranger's join on the same order is refused.
    stranger = AsyncRealtimeClient(url, token=anon)
    await stranger.set_auth(stranger_token)
    snoop = stranger.channel("not-mine")
    snoop.on_postgres_changes("UPDATE", table="orders", schema="public", filter=f"id=eq.{order}", callback=lambda payload: None)
    refused = await joined(stranger, snoop)
    expect(refused and refused[-1][0] == RealtimeSubscribeStates.CHANNEL_ERROR, f"the stranger's join: {refused}")

    # The restaurant moves the order; each move arrives with its status.
    for version, status in [(1, "accepted"), (2, "preparing")]:
        expect(call("POST", f"/v1/orders/{order}/transitions", owner_token, {"to": status}, {"If-Match": f'"{version}"'}) == 200, f"move to {status}")
    await until(lambda: len(changes) >= 2, "both moves")
    records = [change["data"]["record"] for change in changes]
    expect([record["status"] for record in records] == ["accepted", "preparing"], f"statuses in order: {records}")
    expect(all(record["id"] == order for record in records), "each change is the order's")
    expect(all(change["data"]["type"] == "UPDATE" and change["data"]["table"] == "orders" for change in changes), "UPDATEs of orders")

    # A rename reaches a profiles subscriber (the anon key alone).
    watcher = AsyncRealtimeClient(url, token=anon)
    renames = []
    profiles = watcher.channel("profiles")
    profiles.on_postgres_changes("UPDATE", table="profiles", schema="public", callback=lambda payload: renames.append(payload))
    expect((await joined(watcher, profiles))[-1][0] == RealtimeSubscribeStates.SUBSCRIBED, "the profiles join")
    expect(call("PUT", "/auth/v1/user", customer_token, {"data": {"username": new_name}}) == 200, "the rename")
    await until(lambda: any(r["data"]["record"].get("username") == new_name for r in renames), "the rename's change")
    mine = next(r for r in renames if r["data"]["record"].get("username") == new_name)
    expect(mine["data"]["record"]["id"] == customer_id and "email" not in mine["data"]["record"], f"the renamed profile: {mine}")

    # Broadcast: the other client hears it, its sender does not (self is off by default).
    heard, echoed = [], []
    room_a = customer.channel("room")
    room_a.on_broadcast("wave", lambda payload: echoed.append(payload))
    room_b = watcher.channel("room")
    room_b.on_broadcast("wave", lambda payload: heard.append(payload))
    for client, room in [(customer, room_a), (watcher, room_b)]:
        expect((await joined(client, room))[-1][0] == RealtimeSubscribeStates.SUBSCRIBED, "the room's joins")
    await room_a.send_broadcast("wave", {"hello": "there"})
    await until(lambda: heard, "the broadcast")
    expect(heard[0]["payload"] == {"hello": "there"}, f"the broadcast's payload: {heard}")
    await asyncio.sleep(0.5)
    expect(not echoed, "the sender did not hear itself")

    for client in [customer, stranger, watcher]:
        await client.close()
    print("all steps passed")


asyncio.run(main())
