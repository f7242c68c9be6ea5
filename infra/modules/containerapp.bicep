// The extractor alone on Azure Container Apps (the Dockerfile's image), for files past the Functions HTTP limits:
// the same user-assigned identity as the Function Apps, EXTRACTOR_TOKENS from the same Key Vault secret, the same
// worker limits, HTTPS ingress on the image's port 8790, and probes on the unauthenticated liveness path /healthz.
param location string
param name string
param tags object
param identityId string
param identityClientId string
@description('The image (the repository\'s Dockerfile), e.g. myregistry.azurecr.io/docextract-extractor:1.0.')
param image string
@description('Registry server the image is pulled from with the identity (grant it AcrPull there); empty: a public image.')
param registryServer string = ''
@description('Key Vault URI (ending in /) holding the extractor-tokens secret.')
param keyVaultUri string
param logAnalyticsWorkspaceName string
param workers int
param workerMemoryMB int
param timeoutS int
param maxBytes string
param maxOutputBytes string
@description('vCPUs and memory of one replica (a Consumption pair, e.g. 2.0 and 4Gi): keep workers x workerMemoryMB under it.')
param cpu string = '2.0'
param memory string = '4Gi'
@minValue(1)
@maxValue(30)
param maxReplicas int = 10

var port = 8790

resource workspace 'Microsoft.OperationalInsights/workspaces@2023-09-01' existing = {
  name: logAnalyticsWorkspaceName
}

resource environment 'Microsoft.App/managedEnvironments@2024-03-01' = {
  name: 'cae-${name}'
  location: location
  tags: tags
  properties: {
    appLogsConfiguration: {
      destination: 'log-analytics'
      logAnalyticsConfiguration: {
        customerId: workspace.properties.customerId
        sharedKey: workspace.listKeys().primarySharedKey
      }
    }
  }
}

resource app 'Microsoft.App/containerApps@2024-03-01' = {
  name: name
  location: location
  tags: tags
  identity: {
    type: 'UserAssigned'
    userAssignedIdentities: { '${identityId}': {} }
  }
  properties: {
    managedEnvironmentId: environment.id
    configuration: {
      activeRevisionsMode: 'Single'
      ingress: {
        external: true
        targetPort: port
        transport: 'http'
        allowInsecure: false
      }
      registries: empty(registryServer) ? [] : [{ server: registryServer, identity: identityId }]
      // A Key Vault reference read with the identity (Key Vault Secrets User, roles.bicep): the token is never a
      // parameter, an output or part of the template.
      secrets: [
        { name: 'extractor-tokens', keyVaultUrl: '${keyVaultUri}secrets/extractor-tokens', identity: identityId }
      ]
    }
    template: {
      containers: [
        {
          name: 'extractor'
          image: image
          resources: { cpu: json(cpu), memory: memory }
          env: [
            { name: 'EXTRACTOR_TOKENS', secretRef: 'extractor-tokens' }
            { name: 'EXTRACTOR_WORKERS', value: string(workers) }
            { name: 'EXTRACTOR_MEMORY_LIMIT_MB', value: string(workerMemoryMB) }
            { name: 'EXTRACTOR_TIMEOUT_S', value: string(timeoutS) }
            { name: 'EXTRACTOR_MAX_BYTES', value: maxBytes }
            { name: 'EXTRACTOR_MAX_OUTPUT_BYTES', value: maxOutputBytes }
            { name: 'AZURE_CLIENT_ID', value: identityClientId }
          ]
          probes: [
            { type: 'Liveness', httpGet: { path: '/healthz', port: port }, initialDelaySeconds: 10, periodSeconds: 30, failureThreshold: 3 }
            { type: 'Readiness', httpGet: { path: '/healthz', port: port }, periodSeconds: 10, failureThreshold: 3 }
          ]
        }
      ]
      scale: {
        minReplicas: 1
        maxReplicas: maxReplicas
        // One request per worker: past that a replica answers 503 (the contract's "try again later"), so scale first.
        rules: [{ name: 'concurrent-requests', http: { metadata: { concurrentRequests: string(workers) } } }]
      }
    }
  }
}

output name string = app.name
output url string = 'https://${app.properties.configuration.ingress.fqdn}'
