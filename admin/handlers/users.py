"""SASL users: their SCRAM credentials in the metadata log, listed from the image and changed
through the active controller (AlterUserScramCredentials)."""

from __future__ import annotations

import hashlib
import os

from aiohttp import web
from kio.schema.errors import ErrorCode

from admin.errors import ApiError, kafka_error
from admin.handlers.common import context, json_response, json_response_list, read_body
from admin.models import CreateUser, ScramCredential, User
from controller.client import alter_scram_credentials_request
from controller.image import MetadataImage
from controller.records import ScramMechanism
from controller.scram import describe_scram_credentials

_DIGESTS = {ScramMechanism.SCRAM_SHA_256: "sha256", ScramMechanism.SCRAM_SHA_512: "sha512"}
# As Kafka's admin clients salt a password: a fresh random salt per credential.
_SALT_BYTES = 32


def _users(image: MetadataImage, names: list[str] | None = None) -> list[User]:
    return [
        User(
            name=description.user,
            credentials=[
                ScramCredential(mechanism=mechanism.mechanism_name, iterations=iterations)
                for mechanism, iterations in description.credentials
            ],
        )
        for description in describe_scram_credentials(image, names)
        if description.error is ErrorCode.none
    ]


async def users(request: web.Request) -> web.Response:
    return json_response_list(_users(context(request).image()))


async def create_user(request: web.Request) -> web.Response:
    admin = context(request)
    body = await read_body(request, CreateUser)
    mechanism = ScramMechanism[body.mechanism.replace("-", "_")]
    salt = os.urandom(_SALT_BYTES)
    salted = hashlib.pbkdf2_hmac(_DIGESTS[mechanism], body.password.encode(), salt, body.iterations)
    response = await admin.to_controller(
        alter_scram_credentials_request(
            upsertions=[(body.name, int(mechanism), body.iterations, salt, salted)]
        )
    )
    result = response.results[0]
    if result.error_code != ErrorCode.none:
        raise kafka_error(result.error_code, result.error_message, f"user {body.name!r}")

    def stored(current: MetadataImage) -> bool:
        record = current.scram_credential(body.name, mechanism)
        return record is not None and record.salt == salt

    await admin.caught_up(stored)
    return json_response(_users(admin.image(), [body.name])[0], 201)


async def delete_user(request: web.Request) -> web.Response:
    admin = context(request)
    name = request.match_info["name"]
    asked = request.query.get("mechanism")
    mechanism = None if asked is None else ScramMechanism.from_mechanism_name(asked)
    if asked is not None and mechanism is None:
        raise ApiError(
            400,
            "invalid_request",
            f"mechanism must be SCRAM-SHA-256 or SCRAM-SHA-512, not {asked!r}",
        )
    image = admin.image()
    mechanisms = (
        [mechanism]
        if mechanism is not None
        else [m for m in ScramMechanism if image.scram_credential(name, m) is not None]
    )
    if not mechanisms:
        raise ApiError(404, "RESOURCE_NOT_FOUND", f"user {name!r} has no SCRAM credential")
    # One request per mechanism: Kafka refuses a user named twice in one request.
    for each in mechanisms:
        response = await admin.to_controller(
            alter_scram_credentials_request(deletions=[(name, int(each))])
        )
        result = response.results[0]
        if result.error_code != ErrorCode.none:
            raise kafka_error(result.error_code, result.error_message, f"user {name!r}")
    await admin.caught_up(
        lambda current: all(current.scram_credential(name, m) is None for m in mechanisms)
    )
    return web.Response(status=204)
