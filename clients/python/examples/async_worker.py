"""The same guarantee in asyncio: AsyncClient, awaitable."""

# ANCHOR: async
import asyncio
import os

import idem_client


async def main() -> None:
    async with idem_client.AsyncClient(os.environ["IDEM_URL"], os.environ["IDEM_TOKEN"]) as client:

        @client.once("pix.cobranca")
        async def charge(intent: idem_client.Intent) -> dict:
            await asyncio.sleep(0.05)  # the provider call
            return {"charged": intent.payload["valor"]}

        payload = {"cliente_id": "c-2", "valor": "10.00",
                   "chave_pix_destino": "fulano@example.com", "referencia_intencao": "FAT-2"}
        outs = await asyncio.gather(*(charge(payload) for _ in range(8)))
        assert sum(not o.replayed for o in outs) == 1  # eight tasks, one charge


asyncio.run(main())
print("eight tasks, one charge")
# ANCHOR_END: async
