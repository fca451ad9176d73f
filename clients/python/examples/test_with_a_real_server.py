"""How a user's own test starts a real idem server (pytest)."""

# ANCHOR: testing
import idem_client
from idem_client.testing import serve


def test_my_worker_charges_once() -> None:
    with serve() as srv:  # idem serve on a temporary SQLite database
        client = idem_client.Client(srv.url, srv.token)
        runs = []

        @client.once("pix.cobranca")
        def charge(intent: idem_client.Intent) -> str:
            runs.append(intent.key)
            return "ok"

        payload = {"cliente_id": "c-3", "valor": "5.00",
                   "chave_pix_destino": "fulano@example.com", "referencia_intencao": "FAT-3"}
        charge(payload)
        charge(payload)
        assert len(runs) == 1


if __name__ == "__main__":
    test_my_worker_charges_once()
    print("passed")
# ANCHOR_END: testing
