-- wrk: POST /v1/demo/charges behind the Idempotency-Key layer, every
-- request a new key (a real execution: ledger row + stored response).
local token = os.getenv("IDEM_TOKEN")
local run = os.getenv("RUN") or "0"
local threads = 0
local n = 0
id = 0 -- global: setup() sets it per thread

function setup(thread)
  thread:set("id", threads)
  threads = threads + 1
end

function request()
  n = n + 1
  return wrk.format("POST", "/v1/demo/charges",
    {["Authorization"] = "Bearer " .. token, ["Content-Type"] = "application/json",
     ["Idempotency-Key"] = string.format("w%s-%d-%d", run, id, n)},
    '{"amount_cents":18000,"currency":"BRL","customer":"cliente-42"}')
end

