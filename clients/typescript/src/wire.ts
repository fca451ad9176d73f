// Generated from clients/conformance/openapi.json by clients/typescript/codegen
// (npm ci && npm run generate there). Do not edit: scripts/test-typescript-client
// fails when this file differs from what the generator writes.

export interface paths {
    "/v1/actions/{key}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Reads an action's state. */
        get: operations["get_action"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/actions/{key}/begin": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Claims an action for a lease, or says why not. */
        post: operations["begin_action"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/actions/{key}/complete": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Records success under the fencing token. */
        post: operations["complete_action"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/actions/{key}/fail": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Records a failure under the fencing token. */
        post: operations["fail_action"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/actions/{key}/reconcile": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Records what the provider says happened to an uncertain attempt. */
        post: operations["reconcile_action"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/actions/{key}/renew": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Extends a held claim's lease while its effect runs. */
        post: operations["renew_action"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/actions/{key}/uncertain": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Marks a held claim uncertain now: its effect raised, so whether the
         *     provider acted is unknown. The next `begin` answers `uncertain` at once
         *     and `/live`'s work queue lists it, without waiting for the lease.
         */
        post: operations["mark_uncertain"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/events/{source}/{event_id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Claims a webhook or queue message for a lease. */
        post: operations["consume_event"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/events/{source}/{event_id}/complete": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Records that the consumer handled the event: later deliveries are duplicates. */
        post: operations["complete_event"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/events/{source}/{event_id}/fail": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Records that handling failed: retryable releases the event to the next
         *     delivery; final drops every later one.
         */
        post: operations["fail_event"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/intents": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** With `claim`, also claims the frozen intent's action in the same call. */
        post: operations["record_intent"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/intents/{action}/{reference}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Reads a recorded intent without counting a delivery. A redelivered
         *     worker asks this first: when the intent exists it acts on the frozen
         *     payload and skips the model call that would re-extract it.
         */
        get: operations["get_intent"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/intents/{action}/{reference}/supersede": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Supersedes an intent whose action failed (nothing executed): the failed
         *     action is sealed for good, the version it replaces is filed with who
         *     (this tenant's token), when and why (`GET /live/actions/{key}` shows
         *     it), and the intent runs again under a key of its own. Refused (409)
         *     for an action started, uncertain, completed, or not started: a new key
         *     for an effect that may have run would run it twice.
         */
        post: operations["supersede_intent"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/keys": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Derives the key of a candidate payload for the token's tenant; writes nothing. */
        post: operations["derive_key"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/stats": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The live statistics of the token's tenant. */
        get: operations["stats"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
}
export type webhooks = Record<string, never>;
export interface components {
    schemas: {
        /** @description An action as stored. */
        ActionResponse: {
            /** @description The key. */
            key: string;
            /** @description The action type. */
            action: string;
            /** @description `started`, `completed`, `failed` or `uncertain`. */
            state: components["schemas"]["ActionState"];
            /**
             * Format: int64
             * @description The current fencing token.
             */
            token: number;
            /**
             * Format: int32
             * @description Claims so far.
             */
            attempts: number;
            /**
             * Format: int64
             * @description The running lease's end, ms since the epoch.
             */
            lease_until_ms?: number | null;
            /**
             * Format: int64
             * @description When the current attempt started.
             */
            started_ms: number;
            /**
             * Format: int64
             * @description Last change.
             */
            updated_ms: number;
            /** @description The stored response (completed): any JSON value. */
            response?: unknown;
            /** @description The stored error (failed). */
            error?: string | null;
            /** @description Whether the failure may be retried. */
            retryable?: boolean | null;
            /** @description Whether the outcome was learned from the provider by reconcile. */
            reconciled: boolean;
        };
        /**
         * @description `started` (claimed, outcome pending), `completed`, `failed` (retryable or final) or `uncertain` (started, outcome unknown: never completed)
         * @enum {string}
         */
        ActionState: "started" | "completed" | "failed" | "uncertain";
        /** @description `POST /v1/actions/{key}/begin` body. */
        BeginRequest: {
            /**
             * @description The action type (from the catalog) the key belongs to.
             * @example pix.cobranca
             */
            action: string;
            /** @description How long the claim holds, in ms (`default` and `maximum` in the schema). */
            lease_ms?: number | null;
            /**
             * @description The caller's name for this attempt (1 to 128 visible ASCII
             *     characters). Asking again with the same id while its claim is held
             *     answers the same claim and token, so a lost answer is recoverable.
             * @example w1-6f1c0e2a
             */
            attempt_id?: string | null;
            /**
             * Format: int64
             * @description While another holder's lease runs, wait up to this many ms for its
             *     outcome before answering (default 0, at most 20000).
             */
            wait_ms?: number | null;
        };
        /** @description What `begin` decided, tagged by `status`; each status has its members. */
        BeginResponse: {
            /**
             * Format: int64
             * @description The fencing token to present to complete/fail.
             */
            token: number;
            /**
             * Format: int32
             * @description The attempt number, 1 for the first.
             */
            attempt: number;
            /**
             * Format: int64
             * @description The lease end, ms since the epoch.
             */
            lease_until_ms: number;
            /** @description The previous attempt's retryable error, when it failed. */
            previous_error?: string | null;
            /** @enum {string} */
            status: "claimed";
        } | {
            /** @description The stored response: any JSON the effect completed with. */
            response: unknown;
            /**
             * Format: int32
             * @description The attempt that completed it.
             */
            attempt: number;
            /** @description Whether the outcome was learned from the provider by reconcile. */
            reconciled: boolean;
            /** @enum {string} */
            status: "completed";
        } | {
            /** @description The stored final error. */
            error: string;
            /** @enum {string} */
            status: "failed";
        } | {
            /**
             * Format: int64
             * @description The fencing token to present to complete/fail/reconcile.
             */
            token: number;
            /**
             * Format: int32
             * @description The attempt number.
             */
            attempt: number;
            /**
             * Format: int64
             * @description The lease end, ms since the epoch.
             */
            lease_until_ms: number;
            /** @description The attempt whose outcome is unknown. */
            previous: components["schemas"]["PreviousAttemptDoc"];
            /** @description What to do next. */
            advice: string;
            /** @enum {string} */
            status: "uncertain";
        } | {
            /**
             * Format: int64
             * @description The other holder's lease end, ms since the epoch.
             */
            lease_until_ms: number;
            /**
             * Format: int64
             * @description How long until that lease ends, in ms.
             */
            retry_after_ms: number;
            /** @enum {string} */
            status: "in_flight";
        };
        /** @description `GET /v1/demo/charges/count` answer. */
        ChargeCount: {
            /**
             * Format: int64
             * @description Charges the demo provider executed for this tenant.
             */
            count: number;
        };
        /** @description `GET /v1/demo/ledger` answer. */
        ChargeList: {
            /**
             * @description The charges the demo provider executed for this tenant, oldest first
             *     (at most 1000).
             */
            charges: components["schemas"]["ListedCharge"][];
        };
        /** @description `POST /v1/demo/charges` body. */
        ChargeRequest: {
            /**
             * Format: int64
             * @description Amount in cents, 1 to 100000000000.
             */
            amount_cents: number;
            /**
             * @description ISO 4217 code, three uppercase letters (e.g. `BRL`).
             * @example BRL
             */
            currency: string;
            /**
             * @description Who to charge (1-200 characters, no control characters).
             * @example cliente-42
             */
            customer: string;
        };
        /** @description An executed charge. */
        ChargeResponse: {
            /** @description The charge id the provider minted (random, so a replay is visibly the same charge). */
            id: string;
            /**
             * Format: int64
             * @description Amount in cents.
             */
            amount_cents: number;
            /** @description Currency. */
            currency: string;
            /** @description Customer. */
            customer: string;
            /**
             * Format: int64
             * @description When it executed, ms since the epoch.
             */
            created_ms: number;
            /** @description Always `succeeded`. */
            status: string;
        };
        /** @description The claim options `begin` and `POST /v1/intents`' `claim` share. */
        ClaimOptions: {
            /** @description How long the claim holds, in ms (`default` and `maximum` in the schema). */
            lease_ms?: number | null;
            /** @description As `begin`'s `attempt_id`. */
            attempt_id?: string | null;
            /**
             * Format: int64
             * @description As `begin`'s `wait_ms`.
             */
            wait_ms?: number | null;
        };
        /** @description `POST /v1/events/{source}/{event_id}` body (optional). */
        ClaimRequest: {
            /** @description How long the claim holds, in ms (`default` and `maximum` in the schema). */
            lease_ms?: number | null;
        };
        /** @description `POST /v1/events/{source}/{event_id}/complete` body. */
        CompleteEventRequest: {
            /**
             * Format: int64
             * @description The token the claim gave.
             */
            token: number;
        };
        /** @description `POST /v1/actions/{key}/complete` body. */
        CompleteRequest: {
            /**
             * Format: int64
             * @description The fencing token `begin` gave.
             */
            token: number;
            /**
             * @description The provider's response, stored verbatim and returned to every later
             *     `begin`: any JSON value.
             */
            response: unknown;
        };
        /** @description What a delivery of an event should do, tagged by `status`. */
        EventResponse: {
            /**
             * Format: int64
             * @description The fencing token for complete/fail.
             */
            token: number;
            /**
             * Format: int32
             * @description 1 for the first claim.
             */
            attempt: number;
            /**
             * Format: int64
             * @description When the lease ends, ms since the epoch.
             */
            lease_until_ms: number;
            /**
             * @description Why an earlier claim no longer holds it: `expired` (its holder may
             *     have acted) or `released` (it failed retryably).
             */
            previous?: string | null;
            /** @description What to do about an earlier claim that expired. */
            advice?: string | null;
            /** @enum {string} */
            status: "first";
        } | {
            /** @enum {string} */
            status: "duplicate";
        } | {
            /** @enum {string} */
            status: "failed";
        };
        /** @description `POST /v1/events/{source}/{event_id}/fail` body. */
        FailEventRequest: {
            /**
             * Format: int64
             * @description The token the claim gave.
             */
            token: number;
            /**
             * @description `true`: the next delivery claims it again; `false`: later deliveries
             *     are acknowledged and dropped.
             */
            retryable: boolean;
        };
        /** @description `POST /v1/actions/{key}/fail` body. */
        FailRequest: {
            /**
             * Format: int64
             * @description The fencing token `begin` gave.
             */
            token: number;
            /** @description What went wrong. */
            error: string;
            /** @description Whether a later `begin` may claim the action again. */
            retryable: boolean;
        };
        /**
         * @description `POST /v1/keys` and `POST /v1/intents` body.
         * @example {
         *       "action": "pix.cobranca",
         *       "payload": {
         *         "chave_pix_destino": "fulano@example.com",
         *         "cliente_id": "c-1",
         *         "referencia_intencao": "FAT-1",
         *         "valor": "180.00"
         *       }
         *     }
         */
        IntentRequest: {
            /** @description Action type from the catalog, e.g. `pix.cobranca`. */
            action: string;
            /** @description The candidate payload: a JSON object holding at least the action's key fields. */
            payload: Record<string, unknown>;
        };
        /** @description The intent as frozen by its first delivery, and what this delivery was. */
        IntentResponse: components["schemas"]["IntentView"] & {
            /** @description Whether this delivery's candidate differed (it was not stored). */
            diverged: boolean;
            /** @description Whether this delivery created the intent. */
            first_delivery: boolean;
            /** @description The key this delivery's candidate alone would have had. */
            candidate_key: string;
            claim?: components["schemas"]["BeginResponse"] | null;
        };
        /** @description `GET /v1/intents/{action}/{reference}` answer: the intent as frozen. */
        IntentView: {
            /** @description The frozen key. */
            key: string;
            /**
             * Format: int32
             * @description The rules version of the frozen key.
             */
            rules_version: number;
            /** @description The action type. */
            action: string;
            /** @description The intent reference, as stored. */
            reference: string;
            /**
             * @description The frozen normalized payload: the fields the key covers, in their
             *     normalized forms (`valor` in cents, as text). Not what to act on.
             */
            payload: Record<string, unknown>;
            /**
             * @description The candidate as its first delivery sent it (or the latest
             *     correction), in the sender's own names and formats (`"180.00"` stays
             *     `"180.00"`): what a worker acts on. `null` for intents recorded
             *     before idem kept it.
             */
            frozen?: Record<string, unknown> | null;
            /**
             * Format: int32
             * @description 1 for the first write, then one more per correction.
             */
            revision: number;
            /**
             * Format: int64
             * @description Deliveries so far.
             */
            deliveries: number;
            /**
             * Format: int64
             * @description Deliveries whose candidate differed from the frozen payload.
             */
            divergences: number;
            /**
             * Format: int64
             * @description First delivery, ms since the epoch.
             */
            first_seen_ms: number;
            /**
             * Format: int64
             * @description Latest delivery, ms since the epoch.
             */
            last_seen_ms: number;
        };
        /** @description `POST /v1/keys` answer. */
        KeyResponse: {
            /** @description The derived key (64 lowercase hex characters). */
            key: string;
            /**
             * Format: int32
             * @description The rules version it was derived with.
             */
            rules_version: number;
        };
        /** @description One executed charge, as the ledger recorded it. */
        ListedCharge: {
            /** @description The charge id. */
            id: string;
            /**
             * Format: int64
             * @description Amount in cents: what was really charged.
             */
            amount_cents: number;
            /** @description Currency. */
            currency: string;
            /** @description Customer. */
            customer: string;
            /**
             * Format: int64
             * @description When it executed, ms since the epoch.
             */
            created_ms: number;
        };
        /** @description The previous attempt an uncertain claim replaced. */
        PreviousAttemptDoc: {
            /**
             * Format: int64
             * @description Its fencing token (now refused).
             */
            token: number;
            /**
             * Format: int64
             * @description When it started, ms since the epoch.
             */
            started_ms: number;
            /**
             * Format: int64
             * @description When its lease ended (absent once the sweeper marked it uncertain).
             */
            lease_until_ms?: number | null;
        };
        /**
         * @description The schema of [`ApiError`]'s document, for the OpenAPI description: an
         *     RFC 9457 problem document (`application/problem+json`).
         */
        ProblemDoc: {
            /**
             * @description A URN naming the problem, e.g. `urn:idem:problem:key-reused`.
             * @enum {string}
             */
            type: "urn:idem:problem:action-in-flight" | "urn:idem:problem:bad-body" | "urn:idem:problem:bad-request" | "urn:idem:problem:body-too-large" | "urn:idem:problem:conflict" | "urn:idem:problem:cross-site" | "urn:idem:problem:duplicate-member" | "urn:idem:problem:event-in-flight" | "urn:idem:problem:exports-busy" | "urn:idem:problem:feeds-full" | "urn:idem:problem:headers-too-large" | "urn:idem:problem:internal" | "urn:idem:problem:key-reused" | "urn:idem:problem:length-required" | "urn:idem:problem:method-not-allowed" | "urn:idem:problem:misdirected" | "urn:idem:problem:no-route" | "urn:idem:problem:not-found" | "urn:idem:problem:open-monitor-forwarded" | "urn:idem:problem:other-tenant" | "urn:idem:problem:outcome-too-large" | "urn:idem:problem:outcome-unknown" | "urn:idem:problem:rate-limited" | "urn:idem:problem:request-in-progress" | "urn:idem:problem:reserved-member" | "urn:idem:problem:stale-token" | "urn:idem:problem:tenant-disabled" | "urn:idem:problem:timeout" | "urn:idem:problem:too-deep" | "urn:idem:problem:too-large" | "urn:idem:problem:unauthorized" | "urn:idem:problem:unavailable" | "urn:idem:problem:unprocessable" | "urn:idem:problem:unstorable-text" | "urn:idem:problem:unsupported-media-type";
            /** @description A short summary. */
            title: string;
            /**
             * Format: int32
             * @description The HTTP status.
             */
            status: number;
            /** @description What to fix. */
            detail?: string | null;
            /**
             * @description `outcome-too-large`: the outcome's length in bytes; `null` when the
             *     body was over the limit and not read further.
             */
            size?: number | null;
            /** @description `outcome-too-large`: the largest outcome kept (`--max-outcome-bytes`). */
            limit?: number | null;
            /**
             * @description `outcome-too-large`: whether idem marked the action uncertain before
             *     answering. When `false`, mark it yourself
             *     (`POST /v1/actions/{key}/uncertain`): the provider may have acted.
             */
            marked_uncertain?: boolean | null;
            /**
             * Format: int64
             * @description `action-in-flight`, `event-in-flight`: when the holder's lease ends,
             *     ms since the epoch.
             */
            lease_until_ms?: number | null;
            /** @description `too-deep`: the deepest nesting idem reads. */
            max_depth?: number | null;
            /** @description `duplicate-member`, `reserved-member`: the member's name. */
            member?: string | null;
            /** @description `duplicate-member`: where the object is (`$`, `$.payload`, `$.items[2]`). */
            at?: string | null;
        };
        /**
         * @description What the provider says happened to an uncertain attempt.
         * @enum {string}
         */
        ReconcileOutcome: "completed" | "failed";
        /** @description `POST /v1/actions/{key}/reconcile` body. */
        ReconcileRequest: {
            /**
             * Format: int64
             * @description The fencing token the uncertain claim gave.
             */
            token: number;
            /** @description What the provider says happened. */
            outcome: components["schemas"]["ReconcileOutcome"];
            /** @description The provider's response (outcome `completed`): any JSON value. */
            response?: unknown;
            /** @description The error (outcome `failed`). */
            error?: string | null;
            /** @description Whether a retry may run (outcome `failed`; default false). */
            retryable?: boolean | null;
        };
        /**
         * @description `POST /v1/intents` body.
         * @example {
         *       "action": "pix.cobranca",
         *       "claim": {
         *         "attempt_id": "w1-6f1c0e2a",
         *         "lease_ms": 30000
         *       },
         *       "payload": {
         *         "chave_pix_destino": "fulano@example.com",
         *         "cliente_id": "c-1",
         *         "referencia_intencao": "FAT-1",
         *         "valor": "180.00"
         *       }
         *     }
         */
        RecordRequest: {
            /** @description Action type from the catalog, e.g. `pix.cobranca`. */
            action: string;
            /**
             * @description The candidate payload: a JSON object holding at least the action's
             *     key fields. The first delivery's is frozen as sent (`frozen`).
             */
            payload: Record<string, unknown>;
            claim?: components["schemas"]["ClaimOptions"] | null;
        };
        /** @description `POST /v1/actions/{key}/renew` body. */
        RenewRequest: {
            /**
             * Format: int64
             * @description The fencing token of the claim to extend.
             */
            token: number;
            /** @description The new lease, in ms from now (`default` and `maximum` in the schema). */
            lease_ms?: number | null;
        };
        /** @description `POST /v1/actions/{key}/renew` answer. */
        RenewResponse: {
            /**
             * Format: int64
             * @description The token, still holding the claim.
             */
            token: number;
            /**
             * Format: int64
             * @description The lease's new end, ms since the epoch.
             */
            lease_until_ms: number;
        };
        /** @description How a settled event stands. */
        SettledResponse: {
            /** @description `completed`, `failed` or `released`. */
            status: string;
        };
        /**
         * @description `POST /v1/intents/{action}/{reference}/supersede` body.
         * @example {
         *       "candidate": {
         *         "chave_pix_destino": "fulano@example.com",
         *         "cliente_id": "c-1",
         *         "referencia_intencao": "FAT-1",
         *         "valor": "190.00"
         *       },
         *       "reason": "the merchant refused the total: the cart had 3 items"
         *     }
         */
        SupersedeRequest: {
            /** @description Why, for the audit (1 to 1000 characters). */
            reason: string;
            /**
             * @description The corrected candidate, with the intent's own reference. Absent:
             *     the frozen fields stay and the frozen candidate is released, so the
             *     next delivery's is frozen (a payment authorization signed anew).
             */
            candidate?: Record<string, unknown> | null;
        };
        /** @description The intent after a supersession. */
        SupersedeResponse: components["schemas"]["IntentView"] & {
            /** @description The key of the failed action it superseded (sealed for good). */
            superseded_key: string;
            /** @description Whether the candidate was released for the next delivery. */
            released: boolean;
        };
        /** @description `POST /v1/actions/{key}/uncertain` body. */
        UncertainRequest: {
            /**
             * Format: int64
             * @description The fencing token of the held claim.
             */
            token: number;
            /** @description What happened (the exception the effect raised), kept as evidence. */
            error: string;
        };
    };
    responses: never;
    parameters: never;
    requestBodies: never;
    headers: never;
    pathItems: never;
}
export type $defs = Record<string, never>;
export interface operations {
    get_action: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description The key (64 lowercase hex) */
                key: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The action as stored */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ActionResponse"];
                };
            };
            /** @description Malformed key */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["ProblemDoc"];
                };
            };
            /** @description Missing or invalid token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["ProblemDoc"];
                };
            };
            /** @description No such action for this tenant */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["ProblemDoc"];
                };
            };
            /** @description The route does not take this method (`Allow` lists those it takes) */
            405: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["ProblemDoc"];
                };
            };
            /** @description The body is over 64 KiB */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["ProblemDoc"];
                };
            };
            /** @description The body is not `application/json` */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["ProblemDoc"];
                };
            };
            /** @description The request names a host this server does not answer for: an open monitor (loopback, no admin token) answers localhost and loopback addresses only, plus `--allowed-host` names */
            421: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["ProblemDoc"];
                };
            };
            /** @description The body cannot be honoured; JSON nested more than 64 levels is `urn:idem:problem:too-deep` (with `max_depth`), text with a NUL character `urn:idem:problem:unstorable-text` */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["ProblemDoc"];
                };
            };
            /** @description More than 64 headers or 32 KiB of them */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["ProblemDoc"];
                };
            };
            /** @description The store is unavailable; retry after `Retry-After` */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["ProblemDoc"];
                };
            };
        };
    };
    begin_action: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description The frozen intent key (64 lowercase hex) */
                key: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["BeginRequest"];
            };
        };
        responses: {
            /** @description Already finished: `completed` with the stored response, or `failed` for good */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["BeginResponse"];
                };
            };
            /** @description Claimed: act, then complete or fail with the token before the lease ends */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["BeginResponse"];
                };
            };
            /** @description Uncertain: a previous attempt's outcome is unknown. You now hold the action with a new token: retry with the same key or reconcile */
            202: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["BeginResponse"];
                };
            };
            /** @description Malformed key or body */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["ProblemDoc"];
                };
            };
            /** @description Missing or invalid token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["ProblemDoc"];
                };
            };
            /** @description The route does not take this method (`Allow` lists those it takes) */
            405: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["ProblemDoc"];
                };
            };
            /** @description In flight: another holder's lease is running; retry after Retry-After seconds */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["ProblemDoc"];
                };
            };
            /** @description The body is over 64 KiB */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["ProblemDoc"];
                };
            };
            /** @description The body is not `application/json` */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["ProblemDoc"];
                };
            };
            /** @description The request names a host this server does not answer for: an open monitor (loopback, no admin token) answers localhost and loopback addresses only, plus `--allowed-host` names */
            421: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["ProblemDoc"];
                };
            };
            /** @description Unknown action, an action other than the key's, or lease out of range */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["ProblemDoc"];
                };
            };
            /** @description More than 64 headers or 32 KiB of them */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["ProblemDoc"];
                };
            };
            /** @description The store is unavailable; retry after `Retry-After` */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["ProblemDoc"];
                };
            };
        };
    };
    complete_action: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description The key (64 lowercase hex) */
                key: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["CompleteRequest"];
            };
        };
        responses: {
            /** @description Recorded (or the same outcome was already recorded with this token) */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ActionResponse"];
                };
            };
            /** @description Malformed key or body */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["ProblemDoc"];
                };
            };
            /** @description Missing or invalid token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["ProblemDoc"];
                };
            };
            /** @description No such action for this tenant */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["ProblemDoc"];
                };
            };
            /** @description The route does not take this method (`Allow` lists those it takes) */
            405: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["ProblemDoc"];
                };
            };
            /** @description Stale fencing token: a newer claim holds the action; nothing was recorded */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["ProblemDoc"];
                };
            };
            /** @description `outcome-too-large`: the response is over --max-outcome-bytes. The provider acted: the action is now uncertain (`marked_uncertain: true`; the token is read wherever it is in the body, whatever its size), or, when the body had no top-level token (`marked_uncertain: false`), mark it with POST .../uncertain. Never bad input */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["ProblemDoc"];
                };
            };
            /** @description The body is not `application/json` */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["ProblemDoc"];
                };
            };
            /** @description The request names a host this server does not answer for: an open monitor (loopback, no admin token) answers localhost and loopback addresses only, plus `--allowed-host` names */
            421: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["ProblemDoc"];
                };
            };
            /** @description The body cannot be honoured; JSON nested more than 64 levels is `urn:idem:problem:too-deep` (with `max_depth`), text with a NUL character `urn:idem:problem:unstorable-text` */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["ProblemDoc"];
                };
            };
            /** @description More than 64 headers or 32 KiB of them */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["ProblemDoc"];
                };
            };
            /** @description The store is unavailable; retry after `Retry-After` */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["ProblemDoc"];
                };
            };
        };
    };
    fail_action: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description The key (64 lowercase hex) */
                key: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["FailRequest"];
            };
        };
        responses: {
            /** @description Recorded */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ActionResponse"];
                };
            };
            /** @description Malformed key or body */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["ProblemDoc"];
                };
            };
            /** @description Missing or invalid token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["ProblemDoc"];
                };
            };
            /** @description No such action for this tenant */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["ProblemDoc"];
                };
            };
            /** @description The route does not take this method (`Allow` lists those it takes) */
            405: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["ProblemDoc"];
                };
            };
            /** @description Stale fencing token */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["ProblemDoc"];
                };
            };
            /** @description `outcome-too-large`: the error is over --max-outcome-bytes; the action is now uncertain (see `marked_uncertain`) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["ProblemDoc"];
                };
            };
            /** @description The body is not `application/json` */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["ProblemDoc"];
                };
            };
            /** @description The request names a host this server does not answer for: an open monitor (loopback, no admin token) answers localhost and loopback addresses only, plus `--allowed-host` names */
            421: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["ProblemDoc"];
                };
            };
            /** @description The body cannot be honoured; JSON nested more than 64 levels is `urn:idem:problem:too-deep` (with `max_depth`), text with a NUL character `urn:idem:problem:unstorable-text` */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["ProblemDoc"];
                };
            };
            /** @description More than 64 headers or 32 KiB of them */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["ProblemDoc"];
                };
            };
            /** @description The store is unavailable; retry after `Retry-After` */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["ProblemDoc"];
                };
            };
        };
    };
    reconcile_action: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description The key (64 lowercase hex) */
                key: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["ReconcileRequest"];
            };
        };
        responses: {
            /** @description Recorded, marked reconciled */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ActionResponse"];
                };
            };
            /** @description Malformed key or body */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["ProblemDoc"];
                };
            };
            /** @description Missing or invalid token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["ProblemDoc"];
                };
            };
            /** @description No such action for this tenant */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["ProblemDoc"];
                };
            };
            /** @description The route does not take this method (`Allow` lists those it takes) */
            405: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["ProblemDoc"];
                };
            };
            /** @description Stale fencing token */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["ProblemDoc"];
                };
            };
            /** @description `outcome-too-large`: the response or error is over --max-outcome-bytes; the action stays uncertain */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["ProblemDoc"];
                };
            };
            /** @description The body is not `application/json` */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["ProblemDoc"];
                };
            };
            /** @description The request names a host this server does not answer for: an open monitor (loopback, no admin token) answers localhost and loopback addresses only, plus `--allowed-host` names */
            421: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["ProblemDoc"];
                };
            };
            /** @description Outcome not `completed` or `failed`, or its member missing; or the claim is not uncertain (it started fresh and its lease runs: complete or fail it) */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["ProblemDoc"];
                };
            };
            /** @description More than 64 headers or 32 KiB of them */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["ProblemDoc"];
                };
            };
            /** @description The store is unavailable; retry after `Retry-After` */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["ProblemDoc"];
                };
            };
        };
    };
    renew_action: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description The key (64 lowercase hex) */
                key: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["RenewRequest"];
            };
        };
        responses: {
            /** @description Extended */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RenewResponse"];
                };
            };
            /** @description Malformed key or body */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["ProblemDoc"];
                };
            };
            /** @description Missing or invalid token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["ProblemDoc"];
                };
            };
            /** @description No such action for this tenant */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["ProblemDoc"];
                };
            };
            /** @description The route does not take this method (`Allow` lists those it takes) */
            405: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["ProblemDoc"];
                };
            };
            /** @description The token no longer holds the claim (a newer claim took it, it was settled, or its lease ran out): stop and let the next claim settle it */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["ProblemDoc"];
                };
            };
            /** @description The body is over 64 KiB */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["ProblemDoc"];
                };
            };
            /** @description The body is not `application/json` */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["ProblemDoc"];
                };
            };
            /** @description The request names a host this server does not answer for: an open monitor (loopback, no admin token) answers localhost and loopback addresses only, plus `--allowed-host` names */
            421: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["ProblemDoc"];
                };
            };
            /** @description Lease out of range */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["ProblemDoc"];
                };
            };
            /** @description More than 64 headers or 32 KiB of them */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["ProblemDoc"];
                };
            };
            /** @description The store is unavailable; retry after `Retry-After` */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["ProblemDoc"];
                };
            };
        };
    };
    mark_uncertain: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description The key (64 lowercase hex) */
                key: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["UncertainRequest"];
            };
        };
        responses: {
            /** @description Marked uncertain (or it already was, with this token) */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ActionResponse"];
                };
            };
            /** @description Malformed key or body */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["ProblemDoc"];
                };
            };
            /** @description Missing or invalid token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["ProblemDoc"];
                };
            };
            /** @description No such action for this tenant */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["ProblemDoc"];
                };
            };
            /** @description The route does not take this method (`Allow` lists those it takes) */
            405: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["ProblemDoc"];
                };
            };
            /** @description Stale fencing token: a newer claim holds the action, or it was settled */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["ProblemDoc"];
                };
            };
            /** @description The body is over 64 KiB */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["ProblemDoc"];
                };
            };
            /** @description The body is not `application/json` */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["ProblemDoc"];
                };
            };
            /** @description The request names a host this server does not answer for: an open monitor (loopback, no admin token) answers localhost and loopback addresses only, plus `--allowed-host` names */
            421: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["ProblemDoc"];
                };
            };
            /** @description The body cannot be honoured; JSON nested more than 64 levels is `urn:idem:problem:too-deep` (with `max_depth`), text with a NUL character `urn:idem:problem:unstorable-text` */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["ProblemDoc"];
                };
            };
            /** @description More than 64 headers or 32 KiB of them */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["ProblemDoc"];
                };
            };
            /** @description The store is unavailable; retry after `Retry-After` */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["ProblemDoc"];
                };
            };
        };
    };
    consume_event: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Who sent it (1-100 characters, no control characters), e.g. `stripe` */
                source: string;
                /** @description The sender's event id (1-255 characters, no control characters) */
                event_id: string;
            };
            cookie?: never;
        };
        /** @description Optional: the lease, `{"lease_ms": …}` */
        requestBody?: {
            content: {
                "application/json": components["schemas"]["ClaimRequest"] | null;
            };
        };
        responses: {
            /** @description `duplicate` (handled before) or `failed` (failed for good): acknowledge and drop it */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["EventResponse"];
                };
            };
            /** @description `first`: you hold it. Act, then POST .../complete (or .../fail) with the token before the lease ends. `attempt` > 1 with `previous: expired` when an earlier holder's lease ran out (it may have acted) */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["EventResponse"];
                };
            };
            /** @description Empty or oversized name, or a malformed body */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["ProblemDoc"];
                };
            };
            /** @description Missing or invalid token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["ProblemDoc"];
                };
            };
            /** @description The route does not take this method (`Allow` lists those it takes) */
            405: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["ProblemDoc"];
                };
            };
            /** @description Another consumer holds it: retry after Retry-After seconds */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["ProblemDoc"];
                };
            };
            /** @description The body is over 64 KiB */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["ProblemDoc"];
                };
            };
            /** @description The body is not `application/json` */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["ProblemDoc"];
                };
            };
            /** @description The request names a host this server does not answer for: an open monitor (loopback, no admin token) answers localhost and loopback addresses only, plus `--allowed-host` names */
            421: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["ProblemDoc"];
                };
            };
            /** @description lease_ms out of range, or an unknown member */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["ProblemDoc"];
                };
            };
            /** @description More than 64 headers or 32 KiB of them */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["ProblemDoc"];
                };
            };
            /** @description The store is unavailable; retry after `Retry-After` */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["ProblemDoc"];
                };
            };
        };
    };
    complete_event: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Who sent it */
                source: string;
                /** @description The sender's event id */
                event_id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["CompleteEventRequest"];
            };
        };
        responses: {
            /** @description Completed (or already completed with this token) */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["SettledResponse"];
                };
            };
            /** @description Malformed name or body */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["ProblemDoc"];
                };
            };
            /** @description Missing or invalid token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["ProblemDoc"];
                };
            };
            /** @description No such claimed event for this tenant */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["ProblemDoc"];
                };
            };
            /** @description The route does not take this method (`Allow` lists those it takes) */
            405: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["ProblemDoc"];
                };
            };
            /** @description Stale token: a newer claim holds the event; nothing was recorded */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["ProblemDoc"];
                };
            };
            /** @description The body is over 64 KiB */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["ProblemDoc"];
                };
            };
            /** @description The body is not `application/json` */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["ProblemDoc"];
                };
            };
            /** @description The request names a host this server does not answer for: an open monitor (loopback, no admin token) answers localhost and loopback addresses only, plus `--allowed-host` names */
            421: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["ProblemDoc"];
                };
            };
            /** @description The body cannot be honoured; JSON nested more than 64 levels is `urn:idem:problem:too-deep` (with `max_depth`), text with a NUL character `urn:idem:problem:unstorable-text` */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["ProblemDoc"];
                };
            };
            /** @description More than 64 headers or 32 KiB of them */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["ProblemDoc"];
                };
            };
            /** @description The store is unavailable; retry after `Retry-After` */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["ProblemDoc"];
                };
            };
        };
    };
    fail_event: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Who sent it */
                source: string;
                /** @description The sender's event id */
                event_id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["FailEventRequest"];
            };
        };
        responses: {
            /** @description `released` (retryable) or `failed` (for good) */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["SettledResponse"];
                };
            };
            /** @description Malformed name or body */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["ProblemDoc"];
                };
            };
            /** @description Missing or invalid token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["ProblemDoc"];
                };
            };
            /** @description No such claimed event for this tenant */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["ProblemDoc"];
                };
            };
            /** @description The route does not take this method (`Allow` lists those it takes) */
            405: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["ProblemDoc"];
                };
            };
            /** @description Stale token */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["ProblemDoc"];
                };
            };
            /** @description The body is over 64 KiB */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["ProblemDoc"];
                };
            };
            /** @description The body is not `application/json` */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["ProblemDoc"];
                };
            };
            /** @description The request names a host this server does not answer for: an open monitor (loopback, no admin token) answers localhost and loopback addresses only, plus `--allowed-host` names */
            421: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["ProblemDoc"];
                };
            };
            /** @description The body cannot be honoured; JSON nested more than 64 levels is `urn:idem:problem:too-deep` (with `max_depth`), text with a NUL character `urn:idem:problem:unstorable-text` */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["ProblemDoc"];
                };
            };
            /** @description More than 64 headers or 32 KiB of them */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["ProblemDoc"];
                };
            };
            /** @description The store is unavailable; retry after `Retry-After` */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["ProblemDoc"];
                };
            };
        };
    };
    record_intent: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["RecordRequest"];
            };
        };
        responses: {
            /** @description Redelivery: the frozen intent, unchanged */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["IntentResponse"];
                };
            };
            /** @description First delivery: the intent is now frozen */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["IntentResponse"];
                };
            };
            /** @description Malformed JSON */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["ProblemDoc"];
                };
            };
            /** @description Missing or invalid token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["ProblemDoc"];
                };
            };
            /** @description The route does not take this method (`Allow` lists those it takes) */
            405: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["ProblemDoc"];
                };
            };
            /** @description Body over 64 KiB */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["ProblemDoc"];
                };
            };
            /** @description The body is not `application/json` */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["ProblemDoc"];
                };
            };
            /** @description The request names a host this server does not answer for: an open monitor (loopback, no admin token) answers localhost and loopback addresses only, plus `--allowed-host` names */
            421: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["ProblemDoc"];
                };
            };
            /** @description Unknown action, missing or invalid field, or claim options out of range */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["ProblemDoc"];
                };
            };
            /** @description More than 64 headers or 32 KiB of them */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["ProblemDoc"];
                };
            };
            /** @description The store is unavailable; retry after `Retry-After` */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["ProblemDoc"];
                };
            };
        };
    };
    get_intent: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Action type from the catalog, e.g. pix.cobranca */
                action: string;
                /** @description The intent reference, as `POST /v1/intents` returned it */
                reference: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The frozen intent */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["IntentView"];
                };
            };
            /** @description Malformed: a header, path or query parameter (two Authorization headers, for one), or JSON syntax */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["ProblemDoc"];
                };
            };
            /** @description Missing or invalid token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["ProblemDoc"];
                };
            };
            /** @description No such intent for this tenant */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["ProblemDoc"];
                };
            };
            /** @description The route does not take this method (`Allow` lists those it takes) */
            405: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["ProblemDoc"];
                };
            };
            /** @description The body is over 64 KiB */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["ProblemDoc"];
                };
            };
            /** @description The body is not `application/json` */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["ProblemDoc"];
                };
            };
            /** @description The request names a host this server does not answer for: an open monitor (loopback, no admin token) answers localhost and loopback addresses only, plus `--allowed-host` names */
            421: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["ProblemDoc"];
                };
            };
            /** @description Unknown action */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["ProblemDoc"];
                };
            };
            /** @description More than 64 headers or 32 KiB of them */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["ProblemDoc"];
                };
            };
            /** @description The store is unavailable; retry after `Retry-After` */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["ProblemDoc"];
                };
            };
        };
    };
    supersede_intent: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Action type from the catalog, e.g. pix.cobranca */
                action: string;
                /** @description The intent reference */
                reference: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["SupersedeRequest"];
            };
        };
        responses: {
            /** @description Superseded: the intent under its new key */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["SupersedeResponse"];
                };
            };
            /** @description Malformed: a header, path or query parameter (two Authorization headers, for one), or JSON syntax */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["ProblemDoc"];
                };
            };
            /** @description Missing or invalid token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["ProblemDoc"];
                };
            };
            /** @description No such intent for this tenant */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["ProblemDoc"];
                };
            };
            /** @description The route does not take this method (`Allow` lists those it takes) */
            405: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["ProblemDoc"];
                };
            };
            /** @description Its action did not fail: started, uncertain, completed or not started */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["ProblemDoc"];
                };
            };
            /** @description The body is over 64 KiB */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["ProblemDoc"];
                };
            };
            /** @description The body is not `application/json` */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["ProblemDoc"];
                };
            };
            /** @description The request names a host this server does not answer for: an open monitor (loopback, no admin token) answers localhost and loopback addresses only, plus `--allowed-host` names */
            421: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["ProblemDoc"];
                };
            };
            /** @description Unknown action, a reason missing or too long, a candidate invalid or of another reference */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["ProblemDoc"];
                };
            };
            /** @description More than 64 headers or 32 KiB of them */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["ProblemDoc"];
                };
            };
            /** @description The store is unavailable; retry after `Retry-After` */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["ProblemDoc"];
                };
            };
        };
    };
    derive_key: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["IntentRequest"];
            };
        };
        responses: {
            /** @description The key the payload derives to */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["KeyResponse"];
                };
            };
            /** @description Malformed JSON */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["ProblemDoc"];
                };
            };
            /** @description Missing or invalid token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["ProblemDoc"];
                };
            };
            /** @description The route does not take this method (`Allow` lists those it takes) */
            405: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["ProblemDoc"];
                };
            };
            /** @description The body is over 64 KiB */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["ProblemDoc"];
                };
            };
            /** @description The body is not `application/json` */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["ProblemDoc"];
                };
            };
            /** @description The request names a host this server does not answer for: an open monitor (loopback, no admin token) answers localhost and loopback addresses only, plus `--allowed-host` names */
            421: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["ProblemDoc"];
                };
            };
            /** @description Unknown action, missing or invalid field */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["ProblemDoc"];
                };
            };
            /** @description More than 64 headers or 32 KiB of them */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["ProblemDoc"];
                };
            };
            /** @description The store is unavailable; retry after `Retry-After` */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["ProblemDoc"];
                };
            };
        };
    };
    stats: {
        parameters: {
            query?: {
                /** @description `minute`, `hour` (default) or `day`. */
                granularity?: string;
                /** @description Range start, ms since the epoch (default: 24 hours before `to_ms`). */
                from_ms?: number;
                /** @description Range end, exclusive (default: now). */
                to_ms?: number;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Counters per bucket and action, totals, redelivery delays and the duplicate rate */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": Record<string, unknown>;
                };
            };
            /** @description Malformed query */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["ProblemDoc"];
                };
            };
            /** @description Missing or invalid token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["ProblemDoc"];
                };
            };
            /** @description The route does not take this method (`Allow` lists those it takes) */
            405: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["ProblemDoc"];
                };
            };
            /** @description The body is over 64 KiB */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["ProblemDoc"];
                };
            };
            /** @description The body is not `application/json` */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["ProblemDoc"];
                };
            };
            /** @description The request names a host this server does not answer for: an open monitor (loopback, no admin token) answers localhost and loopback addresses only, plus `--allowed-host` names */
            421: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["ProblemDoc"];
                };
            };
            /** @description Empty or too long a range */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["ProblemDoc"];
                };
            };
            /** @description More than 64 headers or 32 KiB of them */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["ProblemDoc"];
                };
            };
            /** @description The store is unavailable; retry after `Retry-After` */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["ProblemDoc"];
                };
            };
        };
    };
}
