"""Drive `skillpkg mcp` with the official Python MCP client (the `mcp`
package) through spec 001's flows, and print what happened as a JSON log.

    python3 session.py FLOW -- SERVER-COMMAND...
    python3 session.py http --url http://127.0.0.1:PORT/mcp
    python3 session.py http-pipelined --url URL [--token TOKEN]
    python3 session.py modern --url URL --root DIR
    python3 session.py live --skill DIR -- SERVER-COMMAND...

FLOW is `http` (two sessions over streamable HTTP: state stays within
each), `catalog` (initialize, tools/list, prompts, resources, the SEP-2640
methods), `choose-activate-use` or `skill-switching` (spec 001's "Typical
Flow" and "Skill Switching"), `pipelined` or `http-pipelined` (a load sent
with the calls that need it, none waiting for a reply, 100 times), `modern`
(the SDK's `Client` on protocol 2026-07-28 over streamable HTTP: a session
handle, a script run in the client's root DIR, a confirmation approved then
declined, each asked in an InputRequiredResult), `live` (a skill written
into DIR while the server runs: the notification, the lists before and
after, loading it). Each log entry is one request and what came
back; the Rust test reads the log and checks it against the specs. The
driver itself asserts nothing, so every expectation lives in one place.
"""

import asyncio
import json
import sys
from pathlib import Path
from typing import Any, Literal

from pydantic import TypeAdapter

import mcp.types as types
from mcp import Client, ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

ANY = TypeAdapter(dict[str, Any])


class SkillsList(types.PaginatedRequest[Literal["skills/list"]]):
    method: Literal["skills/list"] = "skills/list"


class SkillsGet(types.Request[dict[str, Any], Literal["skills/get"]]):
    method: Literal["skills/get"] = "skills/get"
    params: dict[str, Any]


class DirectoryRead(types.Request[dict[str, Any], Literal["resources/directory/read"]]):
    method: Literal["resources/directory/read"] = "resources/directory/read"
    params: dict[str, Any]


def dump(model: Any) -> Any:
    return model.model_dump(by_alias=True, mode="json", exclude_none=True)


async def flow(name: str, session: ClientSession, log: list[dict[str, Any]]) -> None:
    async def tool(tool_name: str, arguments: dict[str, Any]) -> None:
        result = await session.call_tool(tool_name, arguments)
        log.append({"request": "tools/call", "tool": tool_name, "arguments": arguments, "result": dump(result)})

    async def prompt(prompt_name: str) -> None:
        result = await session.get_prompt(prompt_name)
        log.append({"request": "prompts/get", "prompt": prompt_name, "result": dump(result)})

    if name == "catalog":
        log.append({"request": "tools/list", "result": dump(await session.list_tools())})
        log.append({"request": "prompts/list", "result": dump(await session.list_prompts())})
        log.append({"request": "resources/list", "result": dump(await session.list_resources())})
        await prompt("available_skills")
        listed = await session.send_request(SkillsList(), ANY)
        log.append({"request": "skills/list", "result": listed})
        for skill in listed["skills"]:
            got = await session.send_request(SkillsGet(params={"uri": skill["uri"]}), ANY)
            log.append({"request": "skills/get", "uri": skill["uri"], "result": got})
            for resource in skill["resources"]:
                read = await session.read_resource(resource["uri"])
                log.append({"request": "resources/read", "uri": resource["uri"], "result": dump(read)})
        directory = await session.send_request(DirectoryRead(params={"uri": listed["skills"][0]["uri"].removesuffix("SKILL.md")}), ANY)
        log.append({"request": "resources/directory/read", "result": directory})
    elif name == "choose-activate-use":
        # 1. The model sees the available skills and picks one.
        await prompt("available_skills")
        # 2. It loads the skill; 3. the result and the session change.
        await tool("skills_load", {"names": ["pdf-processing"]})
        # 4. The next call's instructions carry the skill's SKILL.md.
        await prompt("active_skills")
        # 5. It reads a reference and runs a script of the skill.
        await tool("skills_read", {"path": "references/forms.md"})
        await tool("skills_run_script", {"path": "scripts/extract.py", "args": ["--pages", "2"]})
    elif name == "skill-switching":
        await tool("skills_load", {"names": ["pdf-processing"]})
        await prompt("active_skills")
        # 1. The model switches: replace the loaded set with skill-b.
        await tool("skills_load", {"names": ["data-analysis"], "mode": "replace"})
        # 2.-3. The state is ["data-analysis"]; the instructions are its only.
        await prompt("active_skills")
        await tool("skills_read", {"skill": "pdf-processing", "path": "references/forms.md"})
    elif name == "pipelined":
        await pipelined(session, log)
    else:
        raise SystemExit(f"unknown flow {name}")


async def pipelined(session: ClientSession, log: list[dict[str, Any]]) -> None:
    """100 rounds of a load sent together with calls that need it, none
    waiting for another's reply: a tool of the skill and a read of its file."""
    for _ in range(100):
        await session.call_tool("skills_unload", {"all": True})
        results = await asyncio.gather(
            session.call_tool("skills_load", {"names": ["text-tools"]}),
            session.call_tool("text-tools__word-count", {"text": "one two"}),
            session.call_tool("skills_read", {"skill": "text-tools", "path": "references/usage.md"}),
            return_exceptions=True,
        )
        log.append({
            "request": "round",
            "results": [
                {"error": str(result)} if isinstance(result, BaseException) else dump(result)
                for result in results
            ],
        })


async def http(url: str, log: list[dict[str, Any]]) -> None:
    """One session loads and reads (several HTTP requests); a second,
    concurrent session has loaded nothing."""
    async with streamable_http_client(url) as (read, write):
        async with ClientSession(read, write) as first:
            log.append({"request": "initialize", "result": dump(await first.initialize())})
            async with streamable_http_client(url) as (read2, write2):
                async with ClientSession(read2, write2) as second:
                    await second.initialize()
                    for session, tool_name, arguments in [
                        (first, "skills_load", {"names": ["pdf-processing"]}),
                        (first, "skills_read", {"path": "references/forms.md"}),
                        (second, "skills_read", {"path": "references/forms.md"}),
                    ]:
                        result = await session.call_tool(tool_name, arguments)
                        log.append({"request": "tools/call", "tool": tool_name, "result": dump(result)})


def approve_then_decline(log: list[dict[str, Any]]) -> Any:
    """An elicitation callback that approves the first question and declines
    the second, logging each."""
    answers = [True, False]

    async def elicitation(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        approve = answers.pop(0)
        log.append({"request": "elicitation/create", "params": dump(params), "answer": approve})
        if approve:
            return types.ElicitResult(action="accept", content={"approve": True})
        return types.ElicitResult(action="decline")

    return elicitation


async def confirm(server: StdioServerParameters, log: list[dict[str, Any]]) -> None:
    """Call a tool that needs confirmation twice: the user approves the
    first call and declines the second."""
    elicitation = approve_then_decline(log)

    async with stdio_client(server) as (read, write):
        async with ClientSession(read, write, elicitation_callback=elicitation) as session:
            await session.initialize()
            await session.call_tool("skills_load", {"names": ["cleanup"]})
            for _ in range(2):
                result = await session.call_tool("cleanup__delete-output", {"dry_run": False})
                log.append({"request": "tools/call", "result": dump(result)})


async def live(server: StdioServerParameters, skill: str, log: list[dict[str, Any]]) -> None:
    """Writes a skill into a scope while connected, then waits for the
    server to say the resources changed."""
    changed = asyncio.Event()

    async def handler(message: Any) -> None:
        if isinstance(message, types.ResourceListChangedNotification):
            changed.set()

    async with stdio_client(server) as (read, write):
        async with ClientSession(read, write, message_handler=handler) as session:
            await session.initialize()
            log.append({"request": "resources/list", "result": dump(await session.list_resources())})
            folder = Path(skill)
            folder.mkdir(parents=True)
            (folder / "SKILL.md").write_text(
                f"---\nname: {folder.name}\ndescription: Notes written while serving.\n---\n# Notes\n\nWritten later.\n"
            )
            try:
                await asyncio.wait_for(changed.wait(), 20)
                log.append({"request": "notifications/resources/list_changed"})
            except TimeoutError:
                log.append({"request": "timeout"})
            log.append({"request": "resources/list", "result": dump(await session.list_resources())})
            loaded = await session.call_tool("skills_load", {"names": [folder.name], "mode": "add"})
            log.append({"request": "tools/call", "tool": "skills_load", "result": dump(loaded)})


async def modern(url: str, root: str, log: list[dict[str, Any]]) -> None:
    """The SDK's own client, negotiating 2026-07-28: what the server asks of
    it (roots, confirmations) comes in InputRequiredResults it answers by
    itself through these callbacks."""
    elicitation = approve_then_decline(log)

    async def roots(context: Any) -> types.ListRootsResult:
        log.append({"request": "roots/list"})
        return types.ListRootsResult(roots=[types.Root(uri=Path(root).as_uri())])

    async with Client(url, elicitation_callback=elicitation, list_roots_callback=roots) as client:
        log.append({"request": "connect", "protocolVersion": client.protocol_version})
        loaded = await client.call_tool("skills_load", {"names": ["cleanup", "where"]})
        log.append({"request": "tools/call", "tool": "skills_load", "result": dump(loaded)})
        handle = (loaded.structured_content or {}).get("session")
        calls: list[tuple[str, dict[str, Any]]] = [
            ("skills_run_script", {"session": handle, "skill": "where", "path": "scripts/pwd.sh", "workdir": root}),
            ("cleanup__delete-output", {"session": handle, "dry_run": False}),
            ("cleanup__delete-output", {"session": handle, "dry_run": False}),
        ]
        for tool_name, arguments in calls:
            result = await client.call_tool(tool_name, arguments)
            log.append({"request": "tools/call", "tool": tool_name, "result": dump(result)})


async def main() -> None:
    flow_name = sys.argv[1]
    if flow_name == "modern":
        log: list[dict[str, Any]] = []
        url = sys.argv[sys.argv.index("--url") + 1]
        await modern(url, sys.argv[sys.argv.index("--root") + 1], log)
        json.dump(log, sys.stdout, indent=1)
        sys.stdout.write("\n")
        return
    if flow_name == "live":
        command = sys.argv[sys.argv.index("--") + 1 :]
        log: list[dict[str, Any]] = []
        skill = sys.argv[sys.argv.index("--skill") + 1]
        await live(StdioServerParameters(command=command[0], args=command[1:]), skill, log)
        json.dump(log, sys.stdout, indent=1)
        sys.stdout.write("\n")
        return
    if flow_name == "confirm":
        command = sys.argv[sys.argv.index("--") + 1 :]
        log: list[dict[str, Any]] = []
        await confirm(StdioServerParameters(command=command[0], args=command[1:]), log)
        json.dump(log, sys.stdout, indent=1)
        sys.stdout.write("\n")
        return
    if flow_name in ("http", "http-pipelined"):
        log: list[dict[str, Any]] = []
        url = sys.argv[sys.argv.index("--url") + 1]
        headers = {}
        if "--token" in sys.argv:
            headers["Authorization"] = "Bearer " + sys.argv[sys.argv.index("--token") + 1]
        if flow_name == "http":
            await http(url, log)
        else:
            client = create_mcp_http_client(headers=headers)
            async with streamable_http_client(url, http_client=client) as (read, write):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    await pipelined(session, log)
        json.dump(log, sys.stdout, indent=1)
        sys.stdout.write("\n")
        return
    command = sys.argv[sys.argv.index("--") + 1 :]
    server = StdioServerParameters(command=command[0], args=command[1:])
    log: list[dict[str, Any]] = []
    async with stdio_client(server) as (read, write):
        async with ClientSession(read, write) as session:
            initialized = await session.initialize()
            log.append({"request": "initialize", "result": dump(initialized)})
            await flow(flow_name, session, log)
    json.dump(log, sys.stdout, indent=1)
    sys.stdout.write("\n")


asyncio.run(main())
