-- Bus messages too large for one NOTIFY (issue 16 item 1): the Postgres
-- bus (internal/bus) stores the payload here and the notification carries
-- the row's id. Rows are read once by each listening replica and pruned by
-- age, never by readers: any number of replicas may still be reading one.
CREATE TABLE bus_payloads (
    id         bigserial   PRIMARY KEY,
    payload    bytea       NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX bus_payloads_created_at ON bus_payloads (created_at);
