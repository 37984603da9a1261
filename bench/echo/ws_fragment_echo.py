#!/usr/bin/env python3
"""A WebSocket echo server that makes the client's rarer paths run: every message comes back in
three fragments (binary, continuation, continuation), and the server pings every 20 ms and
expects the pongs (python websockets closes the connection when one is 2 s late).

    ws_fragment_echo.py <port>

Used by echo_ws_test.sh against strix-echo-bench --ws: every echo must still verify. Needs the
`websockets` package (Debian's python3-websockets).
"""
import asyncio
import sys

import websockets


async def echo_in_pieces(ws, path=None):
    async for msg in ws:
        n = len(msg)
        await ws.send([msg[: n // 3], msg[n // 3: 2 * n // 3], msg[2 * n // 3:]])


async def main(port):
    async with websockets.serve(echo_in_pieces, "127.0.0.1", port, ping_interval=0.02, ping_timeout=2,
                                compression=None):
        print(f"listening on 127.0.0.1:{port}", flush=True)
        await asyncio.Future()


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1])))
