"""A TCP proxy in front of etcd that makes its writes slow, for the fault-injection tests
(tests/integration/decide_faults.sh): as an etcd whose disk is slow to sync.

    delayproxy.py LISTEN_ADDR LISTEN_PORT ETCD_ADDR ETCD_PORT DELAY_FILE [STALL_FILE]

Bytes are passed both ways unchanged. A request of the JSON gateway that writes (kv/put,
kv/txn, kv/deleterange) is held for the number of milliseconds in DELAY_FILE (read at each
request; 0: none) before it is passed on; reads, watches and lease keep-alives are not.
While STALL_FILE holds 1, what etcd sends on a watch stream is held back (as a stalled stream,
or a member cut off from the others that still serves its watches), everything else flows;
held bytes are passed on, in order, once it holds 0 (decide_watch_behind.sh).
"""
import asyncio
import sys

WRITES = (b"/v3/kv/put", b"/v3/kv/txn", b"/v3/kv/deleterange")


def stalled(path):
    try:
        with open(path) as f:
            return f.read().strip() == "1"
    except OSError:
        return False


def delay_s(path):
    try:
        with open(path) as f:
            return max(0.0, float(f.read().strip() or 0) / 1000.0)
    except (OSError, ValueError):
        return 0.0


async def pipe(reader, writer, path=None, conn=None, stall=None):
    try:
        while True:
            data = await reader.read(65536)
            if not data:
                break
            if conn is not None and path and b"/v3/watch" in data:
                conn["watch"] = True
            while stall and conn is not None and conn.get("watch") and stalled(stall):
                await asyncio.sleep(0.1)
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
    stall = sys.argv[6] if len(sys.argv) > 6 else None

    async def client(cr, cw):
        try:
            er, ew = await asyncio.open_connection(eaddr, eport)
        except OSError:
            cw.close()
            return
        conn = {}
        await asyncio.gather(pipe(cr, ew, path, conn), pipe(er, cw, None, conn, stall))

    server = await asyncio.start_server(client, laddr, lport)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main())
