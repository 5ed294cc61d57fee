"""realtime-py's presence against two Splash gateway replicas, unchanged.

Usage: presence_check.py <first gateway url> <second gateway url> <anon key> <token a> <token b>
Aino (on the first replica) and Eero (on the second) join one channel and track themselves; each
sees the other join, Eero's state change, his untrack and, once his socket closes, nobody left but
Aino. Prints "all steps passed", or the first step that failed (and exits 1).
"""
import asyncio
import sys

from realtime import AsyncRealtimeClient, RealtimeSubscribeStates

first, second, anon, token_a, token_b = sys.argv[1:6]


def expect(condition, what):
    if not condition:
        print("FAILED:", what)
        sys.exit(1)


async def until(condition, what, seconds=15):
    for _ in range(seconds * 20):
        if condition():
            return
        await asyncio.sleep(0.05)
    expect(False, f"{what} within {seconds} s")


async def person(gateway, token, key):
    client = AsyncRealtimeClient(gateway + "/realtime/v1", token=anon)
    await client.connect()
    await client.set_auth(token)
    channel = client.channel("lobby", {"config": {"presence": {"key": key}}})
    events = []
    channel.on_presence_join(lambda key, current, new: events.append(("join", key, new)))
    channel.on_presence_leave(lambda key, current, left: events.append(("leave", key, left)))
    states = []
    await channel.subscribe(lambda state, error: states.append(state))
    await until(lambda: RealtimeSubscribeStates.SUBSCRIBED in states, f"{key} subscribed")
    return client, channel, events


def present(channel):
    return {key: [{k: v for k, v in meta.items() if k != "presence_ref"} for meta in metas]
            for key, metas in channel.presence_state().items()}


async def main():
    aino_client, aino, aino_events = await person(first, token_a, "aino")
    eero_client, eero, eero_events = await person(second, token_b, "eero")

    await aino.track({"status": "online", "order": "7"})
    await until(lambda: "aino" in present(eero), "Eero sees Aino (another replica)")
    expect(present(eero)["aino"] == [{"status": "online", "order": "7"}], f"Aino's state at Eero: {present(eero)}")
    expect("aino" in present(aino), f"Aino sees herself: {present(aino)}")

    await eero.track({"status": "online"})
    await until(lambda: "eero" in present(aino), "Aino sees Eero")
    await eero.track({"status": "away"})
    await until(lambda: present(aino).get("eero") == [{"status": "away"}], f"Eero's change at Aino: {present(aino)}")
    expect(len(eero.presence_state()["eero"]) == 1, "one meta per join after a change")

    await eero.untrack()
    await until(lambda: "eero" not in present(aino), "Eero's untrack at Aino")
    expect(any(e[0] == "leave" and e[1] == "eero" for e in aino_events), f"a leave event at Aino: {aino_events}")

    await eero.track({"status": "back"})
    await until(lambda: present(aino).get("eero") == [{"status": "back"}], "Eero back")
    await eero_client.close()
    await until(lambda: "eero" not in present(aino), "Eero gone when his socket closed")
    expect(list(present(aino)) == ["aino"], f"only Aino left: {present(aino)}")
    await aino_client.close()
    print("all steps passed")


asyncio.run(main())
