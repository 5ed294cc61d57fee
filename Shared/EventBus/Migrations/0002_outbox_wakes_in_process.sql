-- The relay of the process that wrote an event is woken in the process once the transaction
-- commits (Outbox with its relay, CommitHooks): a NOTIFY in every writing transaction made Postgres
-- serialise their commits. An outbox without a relay of its own still notifies, from Outbox.
DROP TRIGGER outbox_notify ON outbox;
DROP FUNCTION outbox_notify();
