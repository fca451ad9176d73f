-- The periodic chores (purge and lease sweep, alert evaluation, the
-- statistics fold) are run by one instance of a deployment at a time: each
-- run first takes or renews its chore's lease here. Another instance's run
-- finds the lease held and skips, so N instances do the work once, and when
-- the holder dies its lease runs out and the next instance to try takes it
-- over. `fence` grows at every change of holder, so a log can tell who led
-- when. Every chore statement is still safe to run twice: during a failover
-- two instances can both believe they hold a lease. Keyed by tenant like
-- every table; the rows go under '_admin', a name no tenant can take.
create table chore_leases (
    tenant_id text not null,
    chore text not null,
    holder text not null,
    fence bigint not null,
    until_ms bigint not null,
    primary key (tenant_id, chore)
);
