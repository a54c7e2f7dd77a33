"""A TCP proxy in front of etcd that makes its writes slow, for the fault-injection tests
(tests/integration/decide_faults.sh): as an etcd whose disk is slow to sync.

    delayproxy.py LISTEN_ADDR LISTEN_PORT ETCD_ADDR ETCD_PORT DELAY_FILE

Bytes are passed both ways unchanged. A request of the JSON gateway that writes (kv/put,
kv/txn, kv/deleterange) is held for the number of milliseconds in DELAY_FILE (read at each
request; 0: none) before it is passed on; reads, watches and lease keep-alives are not.
"""
import asyncio
import sys

WRITES = (b"/v3/kv/put", b"/v3/kv/txn", b"/v3/kv/deleterange")


def delay_s(path):
    try:
        with open(path) as f:
            return max(0.0, float(f.read().strip() or 0) / 1000.0)
    except (OSError, ValueError):
        return 0.0


async def pipe(reader, writer, path=None):
    try:
        while True:
            data = await reader.read(65536)
            if not data:
                break
            if path and any(w in data for w in WRITES):
                d = delay_s(path)
                if d:
                    await asyncio.sleep(d)
            writer.write(data)
            await writer.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        try:
            writer.close()
        except OSError:
            pass


async def main():
    laddr, lport, eaddr, eport, path = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), sys.argv[5]

    async def client(cr, cw):
        try:
            er, ew = await asyncio.open_connection(eaddr, eport)
        except OSError:
            cw.close()
            return
        await asyncio.gather(pipe(cr, ew, path), pipe(er, cw))

    server = await asyncio.start_server(client, laddr, lport)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main())
