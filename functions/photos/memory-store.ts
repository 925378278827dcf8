import { assertPhotoKey, type PhotoStore, type StoreHealth } from "./store.ts";

/** Objects in a Map: the reference behaviour of the port, for tests. */
export class MemoryPhotoStore implements PhotoStore {
  readonly objects = new Map<string, { bytes: Uint8Array; contentType: string }>();

  async put(key: string, bytes: Uint8Array, contentType: string): Promise<void> {
    assertPhotoKey(key);
    this.objects.set(key, { bytes: bytes.slice(), contentType });
  }

  async get(key: string): Promise<ReadableStream<Uint8Array> | undefined> {
    assertPhotoKey(key);
    const object = this.objects.get(key);
    if (!object) return undefined;
    const bytes = object.bytes;
    return new ReadableStream({
      start(controller) {
        controller.enqueue(bytes.slice());
        controller.close();
      },
    });
  }

  async delete(key: string): Promise<void> {
    assertPhotoKey(key);
    this.objects.delete(key);
  }

  async list(prefix: string): Promise<string[]> {
    return [...this.objects.keys()].filter((key) => key.startsWith(prefix)).sort();
  }

  async health(): Promise<StoreHealth> {
    return "ok";
  }
}
