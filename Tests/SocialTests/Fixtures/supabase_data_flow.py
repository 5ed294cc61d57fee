"""supabase-py's PostgREST client against Splash's /rest/v1, through the gateway, unchanged.

Usage: supabase_data_flow.py <gateway url> <anon key> <password> <ana email> <ben email> <owner email> <restaurant id>
Prints "all steps passed", or the first step that failed (and exits 1).
"""
import sys

from postgrest.types import ReturnMethod
from supabase import create_client

import supabase_checks as checks
from supabase_checks import expect, expect_error

url, anon, password, ana_email, ben_email, owner_email, restaurant_id = sys.argv[1:8]
A, B, C = "unsplash:mate-aqua-01", "unsplash:mate-blinds-02", "unsplash:mate-dune-03"


def signed_in(email):
    return checks.signed_in(url, anon, email, password)


ana, ben, owner, nobody = signed_in(ana_email), signed_in(ben_email), signed_in(owner_email), create_client(url, anon)
ana_id, ben_id = ana.auth.get_user().user.id, ben.auth.get_user().user.id

# Inserts: with the row back (postgrest-py's default), without (return=minimal), the user id in
# upper case as Swift sends it; a duplicate is 409 23505; a row for someone else is 403 42501.
row = ana.table("likes").insert({"photo_key": A}).execute().data
expect(len(row) == 1 and row[0]["photo_key"] == A and row[0]["user_id"] == ana_id and row[0]["created_at"], f"insert returning: {row}")
minimal = ana.table("likes").insert({"user_id": ana_id.upper(), "photo_key": B}, returning=ReturnMethod.minimal).execute()
expect(minimal.data == [], f"insert minimal: {minimal.data}")
expect_error(lambda: ana.table("likes").insert({"photo_key": A}).execute(), "23505", "a second like of one photo")
expect_error(lambda: ana.table("likes").insert({"user_id": ben_id, "photo_key": C}).execute(), "42501", "a like for Ben")
expect_error(lambda: ana.table("likes").insert({"photo_key": C, "stars": 5}).execute(), "PGRST204", "an unknown body column")

# Upserts on (user_id, photo_key): ignoring a duplicate answers no row, merging answers it.
ignored = ana.table("likes").upsert({"user_id": ana_id, "photo_key": A}, on_conflict="user_id,photo_key", ignore_duplicates=True).execute()
expect(ignored.data == [], f"upsert ignore-duplicates: {ignored.data}")
merged = ana.table("likes").upsert([{"user_id": ana_id, "photo_key": A}, {"user_id": ana_id, "photo_key": C}], on_conflict="user_id,photo_key").execute()
expect(sorted(r["photo_key"] for r in merged.data) == [A, C], f"upsert merge-duplicates: {merged.data}")

# Reads: eq, in, ilike, order, limit, range, aliases; counts; .single().
newest = ana.table("likes").select("photo_key,liked_at:created_at").in_("photo_key", [A, B, C]).order("created_at", desc=True).execute().data
expect([r["photo_key"] for r in newest] == [C, B, A] and "liked_at" in newest[0] and "created_at" not in newest[0], f"in + order + alias: {newest}")
expect([r["photo_key"] for r in ana.table("likes").select("*").ilike("photo_key", "%MATE-BLINDS%").execute().data] == [B], "ilike")
expect([r["photo_key"] for r in ana.table("likes").select("*").order("created_at").limit(1).execute().data] == [A], "limit")
expect([r["photo_key"] for r in ana.table("likes").select("*").order("created_at").range(1, 2).execute().data] == [B, C], "range")
expect([r["photo_key"] for r in ana.table("likes").select("*").neq("photo_key", A).order("photo_key").execute().data] == [B, C], "neq")
counted = ana.table("likes").select("*", count="exact", head=True).execute()
expect(counted.count == 3 and not counted.data, f"count=exact with head: {counted.count} {counted.data}")
expect(ana.table("likes").select("photo_key").eq("photo_key", A).single().execute().data == {"photo_key": A}, ".single() with one row")
error = expect_error(lambda: ana.table("likes").select("*").single().execute(), "PGRST116", ".single() with three rows")

# Row-level security: Ben sees none of Ana's likes, and his delete touches none.
expect(ben.table("likes").select("*").eq("user_id", ana_id).execute().data == [], "Ben reads Ana's likes")
expect(ben.table("likes").delete().eq("user_id", ana_id).execute().data == [], "Ben deletes Ana's likes")
expect(nobody.table("likes").select("*").execute().data == [], "the anonymous caller reads likes")
expect(ana.table("likes").select("*", count="exact", head=True).execute().count == 3, "Ana's likes after Ben's delete")

# Collections: insert, update with a filter (Ana's own, then Ben's attempt: 0 rows), is, upper-case ids.
trips = ana.table("collections").insert({"title": "Trips", "private": False}).execute().data[0]
expect(trips["owner_id"] == ana_id and trips["private"] is False, f"collection: {trips}")
renamed = ana.table("collections").update({"title": "Summer trips"}).eq("id", trips["id"]).execute().data
expect([r["title"] for r in renamed] == ["Summer trips"], f"rename: {renamed}")
expect(ben.table("collections").update({"title": "Mine now"}).eq("id", trips["id"]).execute().data == [], "Ben renames Ana's public collection")
expect(ben.table("collections").delete().eq("id", trips["id"]).execute().data == [], "Ben deletes Ana's public collection")
expect([r["title"] for r in ben.table("collections").select("title").eq("id", trips["id"].upper()).execute().data] == ["Summer trips"], "upper-case id")
expect_error(lambda: ben.table("collections").insert({"title": "Ana's", "private": True, "owner_id": ana_id}).execute(), "42501", "a collection for Ana")
expect(ana.table("collection_photos").insert({"collection_id": trips["id"], "photo_key": A}).execute().data[0]["photo_key"] == A, "a photo in a collection")
expect_error(lambda: ben.table("collection_photos").insert({"collection_id": trips["id"], "photo_key": B}).execute(), "42501", "a photo in Ana's collection")

# Profiles, to anyone: is.null on a column no one set; no private field is there.
profile = nobody.table("profiles").select("*").eq("id", ana_id).is_("avatar_url", "null").execute().data
expect(len(profile) == 1 and set(profile[0]) == {"id", "username", "avatar_url", "created_at"}, f"profiles: {profile}")
everyone = nobody.table("profiles").select("*", count="exact", head=True).execute().count
expect(everyone >= 3, f"the user count: {everyone}")
recent = nobody.table("recent_signups").select("username").limit(3).execute().data
expect(len(recent) == 3 and all(set(r) == {"username"} for r in recent), f"recent sign-ups: {recent}")

# Orders: placed through the table (priced from the menu), moved by the owner's rpc, hidden from Ben.
order = ana.table("orders").insert({"restaurant_id": restaurant_id, "items": [{"menu_item_id": "m1", "quantity": 2}],
                                    "dropoff_address": "Mannerheimintie 22", "dropoff_lat": 60.1727, "dropoff_lng": 24.9335}).execute().data[0]
expect(order["status"] == "placed" and order["total_cents"] == 2580 and order["customer_id"] == ana_id, f"order: {order}")
moved = owner.rpc("advance_order", {"order_id": order["id"], "to": "accepted", "if_version": order["version"]}).execute().data
expect(moved["status"] == "accepted" and moved["version"] == order["version"] + 1, f"rpc: {moved}")
expect_error(lambda: owner.rpc("advance_order", {"order_id": order["id"], "to": "preparing", "if_version": order["version"]}).execute(), "P0001", "a stale version")
expect(ben.table("orders").select("*").eq("id", order["id"]).execute().data == [], "Ben reads Ana's order")
expect_error(lambda: ana.table("orders").update({"notes": "x"}).eq("id", order["id"]).execute(), "42501", "a status moved by PATCH")
expect(len(nobody.table("restaurants").select("id,name").eq("id", restaurant_id).execute().data) == 1, "restaurants to anyone")

# Bad input: each the PostgREST error, never a 500.
expect_error(lambda: ana.table("likes").select("stars").execute(), "42703", "an unknown column in select")
expect_error(lambda: ana.table("likes").select("*").order("stars").execute(), "42703", "an unknown column in order")
expect_error(lambda: ana.table("likes").select("*").filter("photo_key", "between", "1").execute(), "PGRST100", "a bad operator")
expect_error(lambda: ana.table("likes").select("*").filter("photo_key", "in", "(a,b").execute(), "PGRST100", "a malformed in list")
expect_error(lambda: ana.table("collections").select("*").eq("id", "not-a-uuid").execute(), "22P02", "a bad uuid")
expect_error(lambda: ana.table("secrets").select("*").execute(), "PGRST205", "an unknown table")
expect_error(lambda: ana.table("likes").delete().execute(), "21000", "a delete without a filter")
expect(ana.table("likes").select("*").eq("photo_key", "1;drop table likes").execute().data == [], "an SQL-ish value")
many = ana.table("likes").select("photo_key").in_("photo_key", [f"x{i}" for i in range(5000)] + [A]).execute().data
expect([r["photo_key"] for r in many] == [A], f"a 5,000-value in list: {many}")

# Deletes with a filter, the rows back.
gone = ana.table("likes").delete().eq("photo_key", B).execute().data
expect([r["photo_key"] for r in gone] == [B], f"delete: {gone}")
expect(ana.table("likes").select("*", count="exact", head=True).execute().count == 2, "after the delete")

print("all steps passed")
