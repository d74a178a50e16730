//#region src/schema.ts
const DEFAULT_INPUT_SCHEMA = {
	type: "object",
	properties: {}
};
const FAILED_TO_PARSE_INPUT_ARGUMENTS_MESSAGE = "Failed to parse input arguments";
const TOOL_INVOCATION_FAILED_MESSAGE = "Tool was executed but the invocation failed. For example, the script function threw an error";
const STANDARD_JSON_SCHEMA_TARGETS = ["draft-2020-12", "draft-07"];
const VALID_TOOL_NAME_RE = /^[A-Za-z0-9_.-]{1,128}$/u;
function isPlainObject(value) {
	return typeof value === "object" && value !== null && !Array.isArray(value);
}
function toDomString(value) {
	if (typeof value === "symbol") throw new TypeError("Symbol values cannot be converted to a DOMString");
	return String(value);
}
function coerceWebMcpToolDescriptor(tool) {
	const name = Reflect.get(tool, "name");
	const description = Reflect.get(tool, "description");
	const title = Reflect.get(tool, "title");
	if (name === void 0) throw new TypeError("Tool \"name\" is required");
	if (description === void 0) throw new TypeError("Tool \"description\" is required");
	const annotations = Reflect.get(tool, "annotations");
	const annotationMembers = isPlainObject(annotations) ? annotations : {};
	const inputSchema = Reflect.get(tool, "inputSchema");
	const outputSchema = Reflect.get(tool, "outputSchema");
	const execute = Reflect.get(tool, "execute");
	return {
		name: toDomString(name),
		...title === void 0 ? {} : { title: toDomString(title).toWellFormed() },
		description: toDomString(description),
		...inputSchema === void 0 ? {} : { inputSchema },
		...outputSchema === void 0 ? {} : { outputSchema },
		execute,
		...annotations === void 0 ? {} : { annotations: {
			...annotationMembers.title === void 0 ? {} : { title: toDomString(annotationMembers.title).toWellFormed() },
			readOnlyHint: Boolean(annotationMembers.readOnlyHint),
			...annotationMembers.destructiveHint === void 0 ? {} : { destructiveHint: Boolean(annotationMembers.destructiveHint) },
			...annotationMembers.idempotentHint === void 0 ? {} : { idempotentHint: Boolean(annotationMembers.idempotentHint) },
			...annotationMembers.openWorldHint === void 0 ? {} : { openWorldHint: Boolean(annotationMembers.openWorldHint) },
			untrustedContentHint: Boolean(annotationMembers.untrustedContentHint)
		} }
	};
}
function isJsonObjectRecord(value) {
	if (!isPlainObject(value)) return false;
	const prototype = Object.getPrototypeOf(value);
	return prototype === Object.prototype || prototype === null;
}
function isJsonValue(value, seen = /* @__PURE__ */ new WeakSet()) {
	if (value === null || typeof value === "string" || typeof value === "boolean") return true;
	if (typeof value === "number") return Number.isFinite(value);
	if (typeof value !== "object") return false;
	if (seen.has(value)) return false;
	seen.add(value);
	try {
		return (Array.isArray(value) ? value : isJsonObjectRecord(value) ? Object.values(value) : null)?.every((entry) => isJsonValue(entry, seen)) ?? false;
	} catch {
		return false;
	} finally {
		seen.delete(value);
	}
}
function toJsonValue(value) {
	return isJsonValue(value) ? value : void 0;
}
function hasCallToolResultShape(value) {
	return isPlainObject(value) && Array.isArray(value.content);
}
function serializeTextContent(value) {
	if (typeof value === "string") return value;
	try {
		return JSON.stringify(value) ?? String(value);
	} catch {
		return String(value);
	}
}
function normalizeToolResponse(value) {
	if (hasCallToolResultShape(value)) return value;
	const structuredContent = toJsonValue(value);
	return {
		content: [{
			type: "text",
			text: serializeTextContent(value)
		}],
		...structuredContent === void 0 ? {} : { structuredContent },
		isError: false
	};
}
function createUnknownError(message) {
	return new DOMException(message, "UnknownError");
}
function createToolInvocationFailedError(error) {
	return createUnknownError(error instanceof Error ? `${TOOL_INVOCATION_FAILED_MESSAGE}: ${error.message}` : TOOL_INVOCATION_FAILED_MESSAGE);
}
function createInvalidStateError(message) {
	return new DOMException(message, "InvalidStateError");
}
function validateWebMcpToolDescriptor(tool) {
	if (tool.name === "") throw createInvalidStateError("Tool \"name\" must be a non-empty string");
	if (typeof tool.name !== "string" || !VALID_TOOL_NAME_RE.test(tool.name)) throw createInvalidStateError("Tool \"name\" must be 1–128 characters and contain only ASCII alphanumeric, underscore, hyphen, or period");
	if (typeof tool.description !== "string" || tool.description.length === 0) throw createInvalidStateError("Tool \"description\" must be a non-empty string");
	if (typeof tool.execute !== "function") throw new TypeError("Tool \"execute\" must be a function");
}
function toWebMcpAnnotations(annotations) {
	return {
		readOnlyHint: annotations.readOnlyHint ?? false,
		untrustedContentHint: annotations.untrustedContentHint ?? false
	};
}
function parseChromeToolInput(input) {
	try {
		const value = JSON.parse(input);
		if (Array.isArray(value) || isPlainObject(value)) return value;
	} catch {}
	throw createUnknownError(FAILED_TO_PARSE_INPUT_ARGUMENTS_MESSAGE);
}
function serializeChromeToolResult(value) {
	if (typeof value === "object" && value !== null || typeof value === "function") try {
		const serialized = JSON.stringify(value);
		if (serialized) return serialized;
	} catch {}
	return String(value) || "Operation succeeded";
}
function withAbortSignal(operation, signal, getAbortReason = () => signal?.reason) {
	if (!signal) return operation;
	if (signal.aborted) return Promise.reject(getAbortReason());
	return new Promise((resolve, reject) => {
		const onAbort = () => {
			cleanup();
			reject(getAbortReason());
		};
		const cleanup = () => signal.removeEventListener("abort", onAbort);
		signal.addEventListener("abort", onAbort, { once: true });
		operation.then((value) => {
			cleanup();
			resolve(value);
		}, (error) => {
			cleanup();
			reject(error);
		});
	});
}
function isPotentiallyTrustworthyOrigin(url) {
	const originUrl = url.origin === "null" ? url : new URL(url.origin);
	const protocol = originUrl.protocol;
	if ([
		"https:",
		"wss:",
		"file:",
		"chrome-extension:",
		"moz-extension:"
	].includes(protocol)) return true;
	const hostname = originUrl.hostname.toLowerCase();
	const ipv4 = hostname.split(".");
	const isLoopbackIpv4 = ipv4.length === 4 && ipv4.every((part) => /^\d{1,3}$/u.test(part) && Number(part) <= 255) && Number(ipv4[0]) === 127;
	return hostname === "::1" || hostname === "[::1]" || hostname === "localhost" || hostname === "localhost." || hostname.endsWith(".localhost") || hostname.endsWith(".localhost.") || isLoopbackIpv4;
}
function validatePotentiallyTrustworthyOrigins(origins) {
	for (const origin of origins ?? []) {
		let parsed;
		try {
			parsed = new URL(origin);
		} catch {
			throw new DOMException(`Invalid or untrustworthy origin: ${String(origin)}`, "SecurityError");
		}
		if (!isPotentiallyTrustworthyOrigin(parsed)) throw new DOMException(`Invalid or untrustworthy origin: ${origin}`, "SecurityError");
	}
}
function validateWebMcpAccess(ownerDocument) {
	validateOriginAgentCluster();
	if (!ownerDocument) return;
	const DOMExceptionConstructor = ownerDocument.defaultView?.DOMException ?? DOMException;
	let fullyActive = false;
	try {
		const ownerWindow = ownerDocument.defaultView;
		fullyActive = Boolean(ownerWindow && ownerWindow.document === ownerDocument);
	} catch {}
	if (!fullyActive) throw new DOMExceptionConstructor("The associated document is not fully active", "InvalidStateError");
	const policy = Reflect.get(ownerDocument, "permissionsPolicy") ?? Reflect.get(ownerDocument, "featurePolicy");
	if (policy && typeof policy === "object") {
		const features = Reflect.get(policy, "features");
		const allowsFeature = Reflect.get(policy, "allowsFeature");
		if (typeof features === "function" && typeof allowsFeature === "function") {
			const supported = Reflect.apply(features, policy, []);
			if (Array.isArray(supported) && supported.includes("tools")) {
				if (Reflect.apply(allowsFeature, policy, ["tools"]) === true) return;
				throw new DOMExceptionConstructor("WebMCP is disabled by Permissions Policy", "NotAllowedError");
			}
		}
	}
	const ownerWindow = ownerDocument.defaultView;
	if (!ownerWindow || ownerWindow.parent === ownerWindow) return;
	try {
		ownerWindow.parent.document;
		return;
	} catch {}
	throw new DOMExceptionConstructor("WebMCP in cross-origin frames requires native Permissions Policy support", "NotAllowedError");
}
function validateOriginAgentCluster() {
	if (globalThis.originAgentCluster === false && globalThis.location?.protocol !== "file:") throw new DOMException("", "SecurityError");
}
function validateExecutableOrigin(origin) {
	try {
		if (new URL(String(origin)).origin !== "null") return;
	} catch {}
	throw new DOMException(`Unsupported tool origin: ${String(origin)}`, "NotSupportedError");
}
function getStandardProps(value) {
	if (!isPlainObject(value)) return null;
	const standard = value["~standard"];
	if (!isPlainObject(standard)) return null;
	return standard;
}
function isStandardInputValidatorSchema(value) {
	const standard = getStandardProps(value);
	return Boolean(standard && standard.version === 1 && typeof standard.validate === "function");
}
function isStandardInputJsonSchema(value) {
	const standard = getStandardProps(value);
	if (!standard || standard.version !== 1 || !isPlainObject(standard.jsonSchema)) return false;
	return typeof standard.jsonSchema.input === "function";
}
function preserveStandardSchema(inputSchema, standardSchema) {
	const normalized = { ...inputSchema };
	Object.defineProperty(normalized, "~standard", { value: standardSchema["~standard"] });
	return normalized;
}
function convertStandardInputSchema(schema) {
	for (const target of STANDARD_JSON_SCHEMA_TARGETS) try {
		const serialized = serializeInputSchema(schema["~standard"].jsonSchema.input({ target }));
		const parsed = JSON.parse(serialized);
		if (!isPlainObject(parsed)) throw new TypeError("inputSchema must serialize to an object");
		return parsed;
	} catch {}
	throw new Error("Failed to convert Standard JSON Schema inputSchema to a JSON Schema object");
}
function normalizeInputSchema(inputSchema) {
	if (inputSchema === void 0) return { inputSchema: DEFAULT_INPUT_SCHEMA };
	if (isStandardInputJsonSchema(inputSchema)) {
		const converted = convertStandardInputSchema(inputSchema);
		const registeredInputSchema = serializeInputSchema(converted);
		return {
			inputSchema: isStandardInputValidatorSchema(inputSchema) ? preserveStandardSchema(converted, inputSchema) : converted,
			registeredInputSchema
		};
	}
	if (isStandardInputValidatorSchema(inputSchema)) throw new Error("Standard Schema inputSchema must provide ~standard.jsonSchema.input() for tool metadata");
	if (inputSchema === null || typeof inputSchema !== "object" && typeof inputSchema !== "function") throw new TypeError("inputSchema must be an object");
	const registeredInputSchema = serializeInputSchema(inputSchema);
	const serializedValue = JSON.parse(registeredInputSchema);
	const jsonSchema = isPlainObject(serializedValue) ? serializedValue : void 0;
	if (!jsonSchema || Object.keys(jsonSchema).length === 0) return {
		inputSchema: DEFAULT_INPUT_SCHEMA,
		registeredInputSchema
	};
	return {
		inputSchema: jsonSchema.type === void 0 ? {
			type: "object",
			...jsonSchema
		} : jsonSchema,
		registeredInputSchema
	};
}
function serializeInputSchema(schema) {
	if (schema === null || typeof schema !== "object" && typeof schema !== "function") throw new TypeError("inputSchema must be an object");
	const serialized = JSON.stringify(schema);
	if (serialized === void 0) throw new TypeError("inputSchema must be JSON-serializable");
	return serialized;
}

//#endregion
export { coerceWebMcpToolDescriptor, createInvalidStateError, createToolInvocationFailedError, createUnknownError, isPlainObject, normalizeInputSchema, normalizeToolResponse, parseChromeToolInput, serializeChromeToolResult, serializeInputSchema, toWebMcpAnnotations, validateExecutableOrigin, validateOriginAgentCluster, validatePotentiallyTrustworthyOrigins, validateWebMcpAccess, validateWebMcpToolDescriptor, withAbortSignal };
