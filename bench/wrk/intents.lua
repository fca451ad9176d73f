-- wrk: POST /v1/intents, every request a new intent (a real first write).
-- IDEM_TOKEN: the bearer token; RUN: a prefix that keeps references new.
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
  local body = string.format(
    '{"action":"pix.cobranca","payload":{"cliente_id":"cli-1","valor":"180.00",' ..
    '"chave_pix_destino":"+55 11 98888-7777","referencia_intencao":"w%s-%d-%d"}}', run, id, n)
  return wrk.format("POST", "/v1/intents",
    {["Authorization"] = "Bearer " .. token, ["Content-Type"] = "application/json"}, body)
end

